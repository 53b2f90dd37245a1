import assert from "node:assert/strict";
import { test } from "node:test";
import { cardLines, cropOf, whyItWaits } from "../src/card-view.js";
import type { ApprovalRequest } from "../src/protocol.gen.js";

const request = (extra: Partial<ApprovalRequest> = {}): ApprovalRequest =>
  ({
    type: "approval.request",
    request_id: "q1",
    session_id: "s1",
    step: 2,
    candidate: { thought: "raw thought", action: "click('1\u200b3')" },
    candidate_index: 0,
    reward: 0.12,
    feedback: "raw feedback",
    reason: "below_threshold",
    expires_in_s: 120,
    threshold: 0.3,
    guard: [],
    card: {
      target: { bid: "13", role: "button", name: "Place\u200b order", box: [10, 20, 100, 30] },
      destination: "https://p\u0430ypal.com/pay",
      typed: "\u202e91\u202c",
      thought: "Pay \u202eevil\u202c now.",
      feedback: "The button places the order.",
      others: [
        { index: 2, action: "go_back()", reward: 0.4 },
        { index: 1, action: "scroll(0, 300)", reward: null },
      ],
      screenshot: null,
    },
    ...extra,
  }) as ApprovalRequest;

test("the card's lines: target, destination, typed, thought, feedback, others, all escaped", () => {
  const c = cardLines(request());
  assert.equal(c.action, "click('1\\u200b3')");
  assert.equal(c.target, "button “Place\\u200b order” [13]");
  assert.equal(c.destination, "https://xn--pypal-4ve.com/pay");
  assert.equal(c.typed, "“\\u202e91\\u202c”");
  assert.equal(c.thought, "Pay \\u202eevil\\u202c now.");
  assert.equal(c.feedback, "The button places the order.");
  assert.deepEqual(c.others, ["#2  0.40  go_back()", "#1  n/a  scroll(0, 300)"]);
  assert.deepEqual(c.why, ["reward 0.12 is below the threshold 0.30"]);
});

test("without a card: the request's own thought and feedback, no target", () => {
  const c = cardLines(request({ card: null }));
  assert.equal(c.target, null);
  assert.equal(c.destination, null);
  assert.equal(c.thought, "raw thought");
  assert.equal(c.feedback, "raw feedback");
  assert.deepEqual(c.others, []);
});

test("what the page says the step will do is listed, escaped; a paused request says why it waits", () => {
  const c = cardLines(request({ card: { predicts: [{ rule: "form_submit", detail: "submits a POST form to /c\u202ed" }] } }));
  assert.deepEqual(c.predicts, ["form_submit: submits a POST form to /c\\u202ed"]);
  assert.deepEqual(cardLines(request()).predicts, []);
  assert.deepEqual(whyItWaits(request({ reason: "commit" })), ["the browser paused a request that commits"]);
});

test("a target not in the AX tree says so", () => {
  const c = cardLines(request({ card: { target: { bid: "77" } } }));
  assert.equal(c.target, "element [77] (not in the page's AX tree)");
});

test("why it waits: each reason, and every guard hit after it", () => {
  assert.deepEqual(whyItWaits(request({ reason: "reward_drop" })), ["reward 0.12 dropped from the previous step's"]);
  assert.deepEqual(whyItWaits(request({ reason: "always" })), ["the agent asks a person at every step"]);
  const guarded = request({
    reason: "guarded",
    reward: 0.95,
    guard: [
      { rule: "form_submit", detail: "submits a POST form to /checkout" },
      { rule: "name_match", detail: "its name holds \u2066pay\u2069" },
    ],
  });
  assert.deepEqual(whyItWaits(guarded), [
    "a guard holds it whatever the reward (0.95)",
    "⚠ form_submit: submits a POST form to /checkout",
    "⚠ name_match: its name holds \\u2066pay\\u2069",
  ]);
});

test("the crop: the box with a margin, clamped to the image; null outside it", () => {
  assert.deepEqual(cropOf([100, 50, 80, 20], 400, 300), { sx: 84, sy: 34, sw: 112, sh: 52, target: [16, 16, 80, 20] });
  assert.deepEqual(cropOf([0, 0, 10, 10], 20, 20), { sx: 0, sy: 0, sw: 20, sh: 20, target: [0, 0, 10, 10] });
  assert.equal(cropOf([500, 500, 10, 10], 400, 300), null);
  assert.equal(cropOf([-50, -50, 10, 10], 400, 300), null);
  assert.equal(cropOf([Number.NaN, 0, 10, 10], 400, 300), null);
});
