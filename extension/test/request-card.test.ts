import assert from "node:assert/strict";
import { test } from "node:test";
import { whyItWaits } from "../src/card-view.js";
import { clockTime, decisionLines, originToAllow, requestLines, SHOWN_VALUE, summaryLines, timeLeft } from "../src/request-card.js";
import type { ApprovalRequest, HeldRequest } from "../src/protocol.gen.js";

const held: HeldRequest = {
  method: "POST",
  url: "https://shop.ex\u0430mple/orders?x=1",
  kind: "write",
  top_level: false,
  origin: "https://xn--shop-ex-mple-2mh.test",
  fields: [
    { name: "sku", value: "42" },
    { name: "note\u202e", value: "x".repeat(300) },
  ],
  body_bytes: 321,
  page_url: "https://shop.test/cart",
  trigger: "click('31')",
  element: "31",
};

const request = (extra: Partial<ApprovalRequest> = {}): ApprovalRequest =>
  ({
    type: "approval.request",
    request_id: "q1",
    session_id: "s1",
    step: 3,
    candidate: { thought: "", action: "click('31')" },
    candidate_index: null,
    reward: null,
    reason: "commit",
    expires_in_s: 120,
    card: { request: held, headline: "Waiting for you: this sends a POST to shop.test/orders" },
    ...extra,
  }) as ApprovalRequest;

test("a paused request's card: the headline first, then exactly what would be sent, escaped", () => {
  const r = requestLines(request())!;
  assert.equal(r.headline, "Waiting for you: this sends a POST to shop.test/orders");
  assert.equal(r.method, "POST");
  assert.equal(r.url, "https://shop.xn--exmple-4nf/orders?x=1"); // the host as punycode
  assert.equal(r.origin, "https://xn--shop-ex-mple-2mh.test");
  assert.equal(r.fields[0], "sku = 42");
  assert.ok(r.fields[1]!.startsWith("note\\u202e = xxx"), r.fields[1]);
  assert.equal(Array.from(r.fields[1]!.split(" = ")[1]!).length, SHOWN_VALUE); // shortened, ellipsis last
  assert.ok(r.fields[1]!.endsWith("…"));
  assert.equal(r.body, "321 bytes");
  assert.equal(r.trigger, "click('31') on element [31]");
  assert.equal(r.page, "https://shop.test/cart");
});

test("a request the page sent by itself, and one without a headline", () => {
  const r = requestLines(request({ card: { request: { ...held, trigger: null, element: null, fields: [], body_bytes: 0 }, headline: null } }))!;
  assert.equal(r.trigger, "the page itself (no agent action is known to have caused it)");
  assert.equal(r.body, "no body");
  assert.ok(r.headline.startsWith("Waiting for you: this sends data to keep (POST https://shop.xn--exmple-4nf/orders"));
});

test("only a paused request has request lines", () => {
  assert.equal(requestLines(request({ reason: "guarded" })), null);
  assert.equal(requestLines(request({ card: { headline: "x" } })), null);
});

test("a refusal says who refused, why, and the way out; 'a person' only when a person decided", () => {
  const stop = decisionLines({ status: "rejected", by: "daemon", decider: "mode", mode: "stop", note: "the session's mode is 'stop'", way_out: "switch to 'ask'" });
  assert.deepEqual(stop, ["refused by the session's mode; mode: block writes (stop)", "why: the session's mode is 'stop'", "way out: switch to 'ask'"]);
  const person = decisionLines({ status: "approved", by: "extension:me/panel", decider: "person", mode: "ask", way_out: "ignored" });
  assert.deepEqual(person, ["allowed by a person (extension:me/panel); mode: ask first (ask)"]);
  const nobody = decisionLines({ status: "rejected", by: "daemon", decider: "daemon", note: "no person is paired" });
  assert.ok(nobody[0]!.startsWith("refused by the daemon (nobody could decide)"));
  assert.ok(!nobody[0]!.includes("person ("));
  assert.deepEqual(decisionLines({ status: "approved", by: "daemon", decider: "mode", mode: "watch" }, true), ["ran, flagged by the session's mode; mode: run and flag (watch)"]);
});

test("a paused request's card in the task's words: what was clicked, what it sends, why, the judge, the time, each answer", () => {
  const card = {
    request: held,
    headline: "Waiting for you: this sends a POST to shop.test/orders",
    target: { bid: "31", role: "button", name: "Add to\u202e cart", box: [16, 16, 80, 20] },
    labels: [{ name: "sku", label: "Product\u200b code" }],
    amounts: ["Price: $4.99", "Total: \u2066$9.98"],
    why: "The session's mode is 'ask': a request that sends data to keep waits for a person.",
    judge: { step: 3, reward: 0.812, item: 2, item_title: "Add the \u202ecable" },
    expires_at: 1_000_105.4,
    on_approve: "The browser sends this POST once, exactly as shown, and the agent goes on.",
    on_reject: "Nothing is sent; the agent is told that a person refused it, final for this request.",
  };
  const r = requestLines(request({ card } as Partial<ApprovalRequest>))!;
  assert.equal(r.clicked, "button “Add to\\u202e cart” [31]");
  assert.equal(r.fields[0], "Product\\u200b code (sku) = 42"); // the page's label, then the field's name
  assert.ok(r.fields[1]!.startsWith("note\\u202e = "));
  assert.deepEqual(r.amounts, ["Price: $4.99", "Total: \\u2066$9.98"]);
  assert.equal(r.why, card.why);
  assert.equal(r.judge, "reward 0.81 at step 4 · serves checklist item 2: Add the \\u202ecable");
  assert.equal(r.expiresAt, 1_000_105.4);
  assert.equal(timeLeft(r.expiresAt!, 1_000_000), "1:45 (then it is refused)");
  assert.equal(timeLeft(r.expiresAt!, 1_000_104.9), "0:00 (then it is refused)");
  assert.equal(timeLeft(r.expiresAt!, 1_000_106), "none: it is refused unless answered now");
  assert.equal(r.approve, card.on_approve);
  assert.equal(r.reject, card.on_reject);
  assert.deepEqual(whyItWaits(request({ card } as Partial<ApprovalRequest>)), [card.why]);
});

test("a paused request whose step is unknown: no clicked element, no judge, no amounts", () => {
  const r = requestLines(request())!;
  assert.deepEqual([r.clicked, r.judge, r.why, r.expiresAt, r.approve, r.reject], [null, null, null, null, null, null]);
  assert.deepEqual(r.amounts, []);
});

test("the overlay's lines say the same card in short: only the lines it has, fields cut to three", () => {
  const card = {
    request: { ...held, fields: [...held.fields!, { name: "a", value: "1" }, { name: "b", value: "2" }] },
    target: { bid: "31", role: "button", name: "Add to cart" },
    labels: [{ name: "sku", label: "Product" }],
    amounts: ["Total: $9.98"],
    why: "The session's mode is 'ask'.",
    judge: { step: 3, reward: 0.5, item: null },
    expires_at: 1_000_105,
    on_approve: "It is sent once.",
    on_reject: "Nothing is sent.",
  };
  const lines = summaryLines(requestLines(request({ card } as Partial<ApprovalRequest>))!);
  assert.equal(lines[0], "Clicked: button “Add to cart” [31]");
  assert.ok(lines[1]!.startsWith("Sends: Product (sku) = 42 · note\\u202e = xxx"), lines[1]);
  assert.ok(lines[1]!.endsWith(" · a = 1 · … 1 more"), lines[1]);
  assert.deepEqual(lines.slice(2, 5), ["The page says: Total: $9.98", "Why: The session's mode is 'ask'.", "Judge: reward 0.50 at step 4"]);
  assert.match(lines[5]!, /^Decide by \d\d:\d\d:\d\d, or it is refused$/);
  assert.equal(lines[5], `Decide by ${clockTime(1_000_105)}, or it is refused`);
  assert.deepEqual(lines.slice(6), ["Approve: It is sent once.", "Reject: Nothing is sent."]);
  assert.deepEqual(summaryLines(requestLines(request())!), ["Sends: sku = 42 · note\\u202e = " + "x".repeat(SHOWN_VALUE - 1) + "…"]);
});

test("the site a person may allow is the paused request's target origin, as the daemon reads it", () => {
  assert.equal(originToAllow(request()), "https://shop.xn--exmple-4nf"); // from the URL, not the client's `origin`
  const at = (url: string) => originToAllow(request({ card: { request: { ...held, url }, headline: "h" } } as Partial<ApprovalRequest>));
  assert.equal(at("HTTP://Shop.TEST:80/cart/add"), "http://shop.test");
  assert.equal(at("file:///tmp/x"), null);
  assert.equal(at("data:text/plain,x"), null);
  assert.equal(originToAllow(request({ card: { headline: "a held step" } } as Partial<ApprovalRequest>)), null);
});
