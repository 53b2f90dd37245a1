import assert from "node:assert/strict";
import { test } from "node:test";
import { decisionLines, requestLines, SHOWN_VALUE } from "../src/request-card.js";
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
  assert.deepEqual(stop, ["refused by the session's mode; mode stop", "why: the session's mode is 'stop'", "way out: switch to 'ask'"]);
  const person = decisionLines({ status: "approved", by: "extension:me/panel", decider: "person", mode: "ask", way_out: "ignored" });
  assert.deepEqual(person, ["allowed by a person (extension:me/panel); mode ask"]);
  const nobody = decisionLines({ status: "rejected", by: "daemon", decider: "daemon", note: "no person is paired" });
  assert.ok(nobody[0]!.startsWith("refused by the daemon (nobody could decide)"));
  assert.ok(!nobody[0]!.includes("person ("));
  assert.deepEqual(decisionLines({ status: "approved", by: "daemon", decider: "mode", mode: "watch" }, true), ["ran, flagged by the session's mode; mode watch"]);
});
