import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

// scripts/test.mjs, on a folder of test files written here
function runner(files: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), "ws-runner-"));
  for (const [name, body] of Object.entries(files)) writeFileSync(join(dir, name), body);
  return spawnSync(process.execPath, ["scripts/test.mjs", dir], { encoding: "utf8" });
}

const PASS = `import { test } from "node:test";\ntest("fine", () => {});\ntest("also fine", () => {});\n`;
const FAIL = `import assert from "node:assert/strict";\nimport { test } from "node:test";\ntest("broken thing", () => assert.equal(1, 2));\n`;

test("test runner: one line when every test passes", () => {
  const run = runner({ "a.test.mjs": PASS });
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.equal(run.stdout, "unit tests: 2 of 2 passed\n");
  assert.equal(run.stderr, "");
});

test("test runner: the whole report and a failing status when one fails", () => {
  const run = runner({ "a.test.mjs": PASS, "b.test.mjs": FAIL });
  assert.notEqual(run.status, 0);
  assert.match(run.stdout, /not ok \d+ - broken thing/);
  assert.match(run.stdout, /expected: 2/);
  assert.match(run.stderr, /unit tests failed: 1 of 3/);
});
