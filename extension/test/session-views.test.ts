import assert from "node:assert/strict";
import { test } from "node:test";
import type { Scored, Signal, TreeNodeEvent } from "../src/protocol.gen.js";
import { SessionViews, streamedFeedback, treeLine } from "../src/session-views.js";

const scored = (step: number): Scored =>
  ({
    type: "scored",
    session_id: "s1",
    step,
    results: [{ index: 0, reward: 0.5, items: [], feedback: "", samples: [], parsed_samples: 1 }],
    best: 0,
    decision: { status: "auto", index: 0, action: "noop()" },
    timing: { queue_ms: 0, model_ms: 0 },
  }) as unknown as Scored;

const stalled = (step: number, steps: number): Signal => ({
  type: "signal",
  session_id: "s1",
  step,
  kind: "stalled",
  action: "noop()",
  ok: false,
  stalled_steps: steps,
  detail: `no checklist item advanced for ${steps} executed steps`,
});

test("a stalled signal shows until two later steps are scored without a new one", () => {
  const views = new SessionViews();
  views.scored(scored(3), [{ thought: "", action: "noop()" }]);
  assert.equal(views.get("s1")?.stalled, null);
  assert.equal(views.signal({ ...stalled(3, 3), kind: "repeated_action" }), null); // not drawn
  const v = views.signal(stalled(3, 3));
  assert.deepEqual(v?.stalled, { step: 3, steps: 3, detail: "no checklist item advanced for 3 executed steps" });
  views.scored(scored(4), undefined); // step 4's action may stall again: still shown
  assert.equal(views.get("s1")?.stalled?.step, 3);
  views.scored(scored(5), undefined); // step 4 brought no new stall: progress
  assert.equal(views.get("s1")?.stalled, null);
});

const node = (n: number, parent: number | null, depth: number, event: TreeNodeEvent["event"], trying: number | null): TreeNodeEvent =>
  ({ type: "tree.node", session_id: "s1", node: n, parent, depth, status: "frontier", event, trying }) as TreeNodeEvent;

test("a tree search's branch: the node being tried, its parent and depth, what the search does", () => {
  const views = new SessionViews();
  assert.equal(views.ensure("s1").tree, null);
  views.treeNode(node(0, null, 0, "expanded", 0));
  views.treeNode(node(2, 0, 1, "scored", 0));
  views.treeNode(node(5, 2, 2, "scored", 0));
  let v = views.treeNode(node(2, 0, 1, "replayed", 5)); // back to node 2 to try its child 5
  assert.deepEqual(v.tree, { node: 5, parent: 2, depth: 2, doing: "replaying" });
  assert.equal(treeLine(v.tree!), "tree: node 5 ← 2, depth 2, replaying");
  v = views.treeNode(node(0, null, 0, "path", null));
  assert.equal(treeLine(v.tree!), "tree: node 0, depth 0, finished");
});

test("a candidate's streamed feedback is its first sample's: other samples' deltas do not interleave", () => {
  const views = new SessionViews();
  assert.equal(views.progress("s1", 0, 0, "The action does not move"), "The action does not move");
  assert.equal(views.progress("s1", 0, 1, "The action does not move the task forward"), null);
  assert.equal(views.progress("s1", 0, 0, " the task forward."), "The action does not move the task forward.");
  assert.equal(views.progress("s1", 1, 0, "Yes"), "Yes");
  views.scored(scored(1), undefined); // a new step starts afresh
  assert.equal(views.progress("s1", 0, 0, "New"), "New");
});

test("streamed feedback stops where the judgement starts; a held step clears the stream", () => {
  assert.equal(streamedFeedback("The cart is open.\n<answer>\nChecklist 1: Yes"), "The cart is open.");
  assert.equal(streamedFeedback("Half a sentence CHECKLIST EVALUATION: 1 Yes"), "Half a sentence");
  assert.equal(streamedFeedback("  still streaming "), "still streaming");
  const views = new SessionViews();
  views.progress("s1", 0, 0, "Feedback <answer>Yes");
  const v = views.approval({
    type: "approval.request",
    request_id: "q1",
    session_id: "s1",
    step: 0,
    candidate: { thought: "", action: "noop()" },
    reward: 0.1,
    reason: "always",
    expires_in_s: 1,
  } as unknown as Parameters<SessionViews["approval"]>[0]);
  assert.deepEqual(v.progress, {});
});
