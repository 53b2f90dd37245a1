import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import type { CommitMode } from "../src/messages.js";
import { MODES, modeLine } from "../src/mode-control.js";
import { MODE_DOES, MODE_NAMES, allowOriginQuestion, loosens, loosenQuestion, modeShown } from "../src/modes.js";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../../..");
const V = JSON.parse(readFileSync(join(ROOT, "protocol/vectors/modes.json"), "utf8")) as {
  modes: { mode: CommitMode; name: string; does: string; shown: string }[];
  loosens: { old: CommitMode | null; new: CommitMode; looser: boolean }[];
};

test("the mode table is protocol/modes.py's (protocol/vectors/modes.json)", () => {
  assert.deepEqual([...MODES], V.modes.map((m) => m.mode));
  for (const m of V.modes) {
    assert.equal(MODE_NAMES[m.mode], m.name);
    assert.equal(MODE_DOES[m.mode], m.does);
    assert.equal(modeShown(m.mode), m.shown);
  }
  assert.equal(V.loosens.length, 4 * MODES.length);
  for (const c of V.loosens) assert.equal(loosens(c.old, c.new), c.looser, JSON.stringify(c));
});

test("the mode line names what the mode does, never 'stop' alone", () => {
  assert.equal(modeLine("stop"), "mode: block writes (stop) — every write is refused without asking; the agent keeps running");
  assert.equal(modeLine(null), "mode: not known yet");
});

test("the question before loosening names the session and what the new mode does", () => {
  const q = loosenQuestion({ sessionId: "s-1", intent: "Buy a desk lamp" }, "ask", "watch");
  assert.equal(q, "Loosen “Buy a desk lamp” (s-1) from ask first (ask) to run and flag (watch)? In run and flag, writes run without waiting and are only flagged.");
  assert.match(loosenQuestion({ sessionId: "s-2", intent: "" }, null, "watch"), /^Loosen s-2 from its current mode to/);
});

test("allowing one site asks as loosening does: the session and the origin named", () => {
  const q = allowOriginQuestion({ sessionId: "s-1", intent: "Buy a desk lamp" }, "http://shop.test");
  assert.equal(q, "Approve this request and allow http://shop.test for the rest of “Buy a desk lamp” (s-1)? Its later writes to http://shop.test run without asking and are only flagged.");
  assert.match(allowOriginQuestion({ sessionId: "s-2", intent: "" }, "https://a.test:8443"), /for the rest of s-2\?/);
});
