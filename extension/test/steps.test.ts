import assert from "node:assert/strict";
import { test } from "node:test";
import { stepLabel, stepNumber } from "../src/steps.js";

test("a person reads the wire's step index plus one (protocol/steps.py)", () => {
  assert.deepEqual([0, 1, 9].map(stepNumber), [1, 2, 10]);
  assert.equal(stepLabel(0), "step 1");
});
