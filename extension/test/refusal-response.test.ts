import assert from "node:assert/strict";
import { test } from "node:test";
import { refusalNotice, refusalReason, UNASKED } from "../src/refusal-response.js";
import type { HeldRequest } from "../src/protocol.gen.js";

const held: HeldRequest = {
  method: "POST",
  url: "http://127.0.0.1:8000/orders\u202e",
  kind: "write",
  top_level: true,
  origin: "http://127.0.0.1:8000",
  fields: [],
  body_bytes: 5,
  page_url: "http://127.0.0.1:8000/form.html",
  trigger: null,
  element: null,
};

test("a document is aborted (its page stays); any other request fails as a network error", () => {
  assert.equal(refusalReason("Document"), "Aborted");
  for (const t of ["XHR", "Fetch", "Image", "Other", undefined]) assert.equal(refusalReason(t), "BlockedByClient");
});

test("the notice says what was not sent, who refused it and why, escaped", () => {
  const text = refusalNotice(held, { status: "rejected", by: "extension:laptop", decider: "person", note: "not this order", mode: "ask" });
  assert.deepEqual(text.split("\n"), [
    "webshepherd did not send POST http://127.0.0.1:8000/orders\\u202e",
    "refused by a person (extension:laptop); mode: ask first (ask)",
    "why: not this order",
  ]);
  const stop = refusalNotice(held, { status: "rejected", by: "daemon", decider: "mode", note: "the mode is 'stop'", way_out: "switch it", mode: "stop" });
  assert.match(stop, /^refused by the session's mode; mode: block writes \(stop\)$/m);
  assert.match(stop, /^way out: switch it$/m);
});

test("a refusal nobody was asked about says so, never 'None'", () => {
  const text = refusalNotice(null, null);
  assert.equal(text, `webshepherd did not send a request\nrefused\nwhy: ${UNASKED}`);
  assert.doesNotMatch(text, /None|null|undefined/);
  assert.match(refusalNotice(held, { status: "approved", by: "daemon" }), /approval named another request/);
});
