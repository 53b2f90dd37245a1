// Runs the unit tests (node --test on DIR, default build/test/): one line when they all
// pass, node's whole report when one fails (and its exit status).
import { spawnSync } from "node:child_process";

const dir = process.argv[2] ?? "build/test/";
// a run nested in another node --test (this script's own test) must report as a top-level one
const env = { ...process.env };
delete env.NODE_TEST_CONTEXT;
const run = spawnSync(process.execPath, ["--test", "--test-reporter=tap", dir], {
  encoding: "utf8",
  env,
});
const report = `${run.stdout ?? ""}${run.stderr ?? ""}`;
const count = (name) => report.match(new RegExp(`^# ${name} (\\d+)$`, "m"))?.[1] ?? "?";
if (run.status === 0) {
  console.log(`unit tests: ${count("pass")} of ${count("tests")} passed`);
} else {
  process.stdout.write(report);
  console.error(`unit tests failed: ${count("fail")} of ${count("tests")}`);
  process.exitCode = run.status ?? 1;
}
