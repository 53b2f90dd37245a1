import assert from "node:assert/strict";
import { test } from "node:test";
import { splitCode } from "../src/inline-code.js";
import { HOW_TO_PAIR } from "../src/messages.js";

test("a backticked command becomes code, the backticks gone", () => {
  assert.deepEqual(splitCode("run `webshepherd token` and paste it"), [
    { code: false, text: "run " },
    { code: true, text: "webshepherd token" },
    { code: false, text: " and paste it" },
  ]);
  assert.deepEqual(splitCode("no code"), [{ code: false, text: "no code" }]);
  assert.deepEqual(splitCode("a ` alone"), [{ code: false, text: "a ` alone" }]);
});

test("the pairing help shows no backtick once split", () => {
  const parts = splitCode(HOW_TO_PAIR);
  assert.ok(parts.some((p) => p.code && p.text === "webshepherd pair extension"));
  assert.ok(parts.every((p) => !p.text.includes("`")));
});
