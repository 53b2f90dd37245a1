import assert from "node:assert/strict";
import { test } from "node:test";
import type { ApprovalRequest, Scored, Signal, TreeNodeEvent } from "../src/protocol.gen.js";
import { axTarget, clockTime, committedNote, decidedOutcome, drawable, SessionViews, streamedFeedback, treeLine } from "../src/session-views.js";

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

// -- no stale step: what is drawn belongs to the observation it was scored on --------------
const scoredOn = (step: number, actions: string[], rewards: (number | null)[]): Scored => ({
  type: "scored",
  session_id: "s1",
  step,
  best: 0,
  candidates: actions.map((action) => ({ thought: "", action })),
  results: rewards.map((reward, index) => ({ index, reward, parsed_samples: 1 })) as Scored["results"],
  decision: { status: "auto", index: 0, action: actions[0] },
});

const held = (step: number, action: string): ApprovalRequest =>
  ({ type: "approval.request", request_id: `q${step}`, session_id: "s1", step, candidate: { thought: "", action }, candidate_index: 0, reward: 0.2, reason: "always", expires_in_s: 60 }) as ApprovalRequest;

const SEARCH = "RootWebArea 'Results'\n\t[12] link 'Desk lamp'\n\t[13] button 'Add to cart'\n";
const PRODUCT = "RootWebArea 'Desk lamp'\n\t[12] button 'Add to cart'\n\t[14] StaticText '$20'\n";

test("a step held on a new page clears the old page's scores before anything is drawn", () => {
  const views = new SessionViews();
  views.observed("s1", 2, "http://shop.test/search", SEARCH);
  views.scored(scoredOn(2, ["click('12')", "click('13')"], [0.75, 0.999]), undefined);
  let v = views.get("s1")!;
  assert.equal(v.last?.scored.step, 2);
  assert.deepEqual(drawable(v, "http://shop.test/search#top").last?.scored.step, 2);
  // the agent clicked the link: the product page is observed (step 3) and its step held
  views.observed("s1", 3, "http://shop.test/product", PRODUCT);
  v = views.approval(held(3, "click('12')"));
  assert.equal(v.last, null); // no "Candidates · Step 2", no badge on the new page's [12]
  assert.deepEqual(drawable(v, "http://shop.test/product").outlined.map((a) => a.step), [3]);
  assert.deepEqual(v.rewards, [0.75]);
});

test("a held step of a newer observation clears the old scores even when no observation was seen", () => {
  const views = new SessionViews();
  views.scored(scoredOn(2, ["click('12')"], [0.5]), undefined);
  const v = views.approval(held(3, "click('12')"));
  assert.equal(v.last, null);
  assert.equal(v.step, 3);
});

test("a late event of an older page changes nothing drawn; a page that moved on draws nothing old", () => {
  const views = new SessionViews();
  views.observed("s1", 4, "http://shop.test/product", PRODUCT);
  views.scored(scoredOn(4, ["click('12')"], [0.6]), undefined);
  views.observed("s1", 3, "http://shop.test/search", SEARCH); // late
  let v = views.get("s1")!;
  assert.equal(v.step, 4);
  assert.equal(v.last?.scored.step, 4);
  v = views.scored(scoredOn(3, ["click('13')"], [0.1]), undefined); // scored on a page no longer shown
  assert.equal(v.last?.scored.step, 4);
  // the tab navigated before its next observation: the scores are not drawn on the new page
  assert.equal(drawable(v, "http://shop.test/cart").last, null);
  assert.deepEqual(drawable(v, "http://shop.test/cart").outlined, []);
});

test("candidates name their targets from the observation's AX tree", () => {
  const views = new SessionViews();
  views.observed("s1", 0, "http://shop.test/search", SEARCH);
  const v = views.scored(scoredOn(0, ["click('13')", "fill('99', 'x')", "go_back()"], [0.5, 0.2, 0.1]), undefined);
  assert.deepEqual(v.last?.targets, ["button “Add to cart”", null, null]);
  assert.equal(axTarget("\t[a1] textbox \"it's\" focused", "a1"), "textbox “it's”");
  assert.equal(axTarget("[7] generic", "7"), "generic");
  assert.equal(axTarget("[17] link 'x'", "7"), null);
});

test("modes, decided requests and the committed notes of watch mode", () => {
  const views = new SessionViews();
  views.ensure("s1", "Buy a lamp");
  assert.equal(views.mode("s1", undefined), null);
  assert.equal(views.mode("s1", "ask")?.mode, "ask");
  assert.deepEqual(views.modes(["s1"]), [{ sessionId: "s1", intent: "Buy a lamp", mode: "ask" }]);
  const request = { method: "POST", url: "https://shop.test/orders?id=1", kind: "write" as const };
  const refused = views.commitDecided({ type: "commit.decided", session_id: "s1", request, request_digest: "0".repeat(64), decision: { status: "rejected", decider: "mode", mode: "stop" }, flagged: false });
  assert.deepEqual(refused?.flags, []);
  assert.equal(refused?.mode, "stop");
  const ran = views.commitDecided({ type: "commit.decided", session_id: "s1", request, request_digest: "0".repeat(64), decision: { status: "approved", decider: "mode", mode: "watch" }, flagged: true });
  assert.deepEqual(ran?.flags, ["committed: POST shop.test/orders"]);
  assert.equal(views.recentCommits().length, 2);
  assert.equal(committedNote({ request: { method: "GET", url: "https://b.test/", kind: "navigation" } }), "committed: opened b.test");
});

test("the decided action of the latest step is what most likely caused a paused request", () => {
  const views = new SessionViews();
  views.scored(scoredOn(1, ["click('31')"], [0.8]), undefined);
  assert.deepEqual(views.lastDecided("s1"), { action: "click('31')", element: "31" });
  assert.equal(views.lastDecided("nope"), null);
});

test("'Requests decided' tells approved from flagged (ran unheld) from refused, with the time heard", () => {
  const d = (status: string, flagged = false, mode = "ask") => ({ decision: { status, mode } as never, flagged });
  assert.deepEqual(decidedOutcome(d("approved")), { outcome: "approved", words: "Approved" });
  assert.deepEqual(decidedOutcome(d("auto", true, "watch")), { outcome: "flagged", words: "Flagged (ran in watch)" });
  assert.deepEqual(decidedOutcome(d("auto", true, "ask")), { outcome: "flagged", words: "Flagged (ran unheld)" });
  assert.deepEqual(decidedOutcome(d("rejected")), { outcome: "refused", words: "Refused" });
  assert.equal(decidedOutcome(d("timeout")).outcome, "refused");
  const at = new Date(2026, 11, 7, 9, 5, 3).getTime();
  assert.equal(clockTime(at), "09:05:03");
  const views = new SessionViews();
  views.commitDecided({ type: "commit.decided", session_id: "s1", request_id: "c", request: { method: "POST", url: "http://a.test/o" }, decision: { status: "auto" }, flagged: true } as never, at);
  assert.equal(views.recentCommits()[0]!.at, at);
});
