import assert from "node:assert/strict";
import { test } from "node:test";
import vm from "node:vm";
import { BLOCK_SHARED_WORKERS, ChildTargets, SHARED_WORKERS_BLOCKED, type SessionSend } from "../src/child-targets.js";

/** A CDP stand-in that records each command (session, method) and fails the ones named. */
function recorder(failing: string[] = []) {
  const sent: string[] = [];
  const send: SessionSend = async (_tabId, session, method) => {
    sent.push(`${session ?? "tab"} ${method}`);
    if (failing.includes(method)) throw new Error(`${method} refused`);
    return undefined as never;
  };
  return { sent, send };
}

const frame = { sessionId: "S1", targetInfo: { type: "iframe" }, waitingForDebugger: true };

test("a page's SharedWorker refuses with the reason, and the page cannot put it back", () => {
  const ctx = vm.createContext({ DOMException, SharedWorker: function SharedWorker() {} });
  vm.runInContext(BLOCK_SHARED_WORKERS, ctx);
  assert.throws(() => vm.runInContext("new SharedWorker('/w.js')", ctx), (e: Error) => e.message === SHARED_WORKERS_BLOCKED);
  vm.runInContext("try { SharedWorker = function () {}; } catch (e) {}", ctx);
  assert.throws(() => vm.runInContext("new SharedWorker('/w.js')", ctx), (e: Error) => e.message === SHARED_WORKERS_BLOCKED);
});

test("a held tab's child gets Fetch, the refusal and its own auto-attach before it runs", async () => {
  const { sent, send } = recorder();
  const children = new ChildTargets(send, [{ urlPattern: "*" }]);
  await children.attached(7, frame, true);
  assert.deepEqual(sent, ["S1 Fetch.enable", "S1 Page.addScriptToEvaluateOnNewDocument", "S1 Target.setAutoAttach", "S1 Runtime.runIfWaitingForDebugger"]);
  assert.ok(children.has("S1"));
  children.detached("S1");
  assert.ok(!children.has("S1"));
});

test("a worker gets no page script; a child that cannot be held never runs", async () => {
  const worker = recorder(["Target.setAutoAttach"]);
  await new ChildTargets(worker.send, []).attached(7, { sessionId: "W", targetInfo: { type: "service_worker" } }, true);
  assert.deepEqual(worker.sent, ["W Fetch.enable", "W Target.setAutoAttach", "W Runtime.runIfWaitingForDebugger"]);
  const broken = recorder(["Fetch.enable"]);
  await new ChildTargets(broken.send, []).attached(7, frame, true);
  assert.deepEqual(broken.sent, ["S1 Fetch.enable"]);
});

test("a child of a tab that holds no more runs unheld", async () => {
  const { sent, send } = recorder();
  await new ChildTargets(send, []).attached(7, frame, false);
  assert.deepEqual(sent, ["S1 Runtime.runIfWaitingForDebugger"]);
});
