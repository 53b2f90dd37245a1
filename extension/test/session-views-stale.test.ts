import assert from "node:assert/strict";
import { test } from "node:test";
import { axTarget, committedNote, drawable, SessionViews } from "../src/session-views.js";
import type { ApprovalRequest, Scored } from "../src/protocol.gen.js";

const scored = (step: number, actions: string[], rewards: (number | null)[]): Scored => ({
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
  views.scored(scored(2, ["click('12')", "click('13')"], [0.75, 0.999]), undefined);
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
  views.scored(scored(2, ["click('12')"], [0.5]), undefined);
  const v = views.approval(held(3, "click('12')"));
  assert.equal(v.last, null);
  assert.equal(v.step, 3);
});

test("a late event of an older page changes nothing drawn; a page that moved on draws nothing old", () => {
  const views = new SessionViews();
  views.observed("s1", 4, "http://shop.test/product", PRODUCT);
  views.scored(scored(4, ["click('12')"], [0.6]), undefined);
  views.observed("s1", 3, "http://shop.test/search", SEARCH); // late
  let v = views.get("s1")!;
  assert.equal(v.step, 4);
  assert.equal(v.last?.scored.step, 4);
  v = views.scored(scored(3, ["click('13')"], [0.1]), undefined); // scored on a page no longer shown
  assert.equal(v.last?.scored.step, 4);
  // the tab navigated before its next observation: the scores are not drawn on the new page
  assert.equal(drawable(v, "http://shop.test/cart").last, null);
  assert.deepEqual(drawable(v, "http://shop.test/cart").outlined, []);
});

test("candidates name their targets from the observation's AX tree", () => {
  const views = new SessionViews();
  views.observed("s1", 0, "http://shop.test/search", SEARCH);
  const v = views.scored(scored(0, ["click('13')", "fill('99', 'x')", "go_back()"], [0.5, 0.2, 0.1]), undefined);
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
  views.scored(scored(1, ["click('31')"], [0.8]), undefined);
  assert.deepEqual(views.lastDecided("s1"), { action: "click('31')", element: "31" });
  assert.equal(views.lastDecided("nope"), null);
});
