import assert from "node:assert/strict";
import { test } from "node:test";
import { MODE_WORDS, MODES, modeLine } from "../src/mode-control.js";

test("the mode control offers the three modes, each in words", () => {
  assert.deepEqual([...MODES], ["ask", "watch", "stop"]);
  for (const m of MODES) assert.ok(MODE_WORDS[m].length > 10);
  assert.equal(modeLine("stop"), "mode: stop — refuse whatever commits, without asking");
  assert.equal(modeLine(null), "mode: not known yet");
});
