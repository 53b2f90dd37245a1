import assert from "node:assert/strict";
import { test } from "node:test";
import type { HookContext } from "../src/hook-handler.js";
import { createHash, createHmac } from "node:crypto";
import { canonicalJson, hookKey, keyDigest, originOf, parseHookRequest, requestDigest, signReply, type HookReply, type HookRequest } from "../src/page-hook.js";
import type { TabSession } from "../src/tab-sessions.js";

// the handler's imports reach the capture code, which registers chrome listeners at load
(globalThis as { chrome?: unknown }).chrome = {};
const { handleHook } = await import("../src/hook-handler.js");

test("well-formed hook requests are accepted", () => {
  const req = parseHookRequest({ channel: "webshepherd", dir: "request", id: "1", type: "score", candidates: [] });
  assert.equal(req?.type, "score");
});

test("anything else on the window is ignored", () => {
  for (const d of [
    null,
    "webshepherd",
    { channel: "other", dir: "request", id: "1", type: "score" },
    { channel: "webshepherd", dir: "reply", id: "1", type: "scored" },
    { channel: "webshepherd", dir: "request", id: "", type: "score" },
    { channel: "webshepherd", dir: "request", id: "1", type: "hello" },
  ]) {
    assert.equal(parseHookRequest(d), null, JSON.stringify(d));
  }
});

test("keys: the daemon's shape only; digests are SHA-256 hex; origins", async () => {
  const req = (key: unknown) => ({ channel: "webshepherd", dir: "request", id: "1", type: "observe", key }) as HookRequest;
  assert.equal(hookKey(req("q0l5V1pDb3JmW9mG1y2nX3c4Ra8sTb6uKe0vYhwz7Ag")), "q0l5V1pDb3JmW9mG1y2nX3c4Ra8sTb6uKe0vYhwz7Ag");
  for (const bad of [undefined, 42, "", "short", "has space in it, not a key", "x".repeat(129)]) assert.equal(hookKey(req(bad)), null);
  assert.equal(await keyDigest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert.equal(originOf("http://127.0.0.1:8000/a?b"), "http://127.0.0.1:8000");
  assert.equal(originOf("about:blank"), "null");
  assert.equal(originOf(undefined), "null");
});

const KEY = "q0l5V1pDb3JmW9mG1y2nX3c4Ra8sTb6uKe0vYhwz7Ag";
const A = "http://127.0.0.1:8000";

/** A context whose tab 1 follows session s1, bound to origin A and KEY; the connection records what it is sent. */
async function context(pageHook: boolean) {
  const sent: unknown[] = [];
  const tab: TabSession = { sessionId: "s1", intent: "Buy a lamp", demonstration: false, step: 0, origin: A, keyDigest: await keyDigest(KEY) };
  const ctx = {
    connection: () => ({
      state: "connected",
      request: async (msg: { type: string }) => {
        sent.push(msg);
        return msg.type === "action" ? { type: "action.recorded", step: 1 } : { type: "session.ended" };
      },
    }),
    sessions: { get: (id: number) => (id === 1 ? tab : undefined), remove: async () => undefined },
    settings: () => ({ url: "", token: "", flags: "default", pageHook }),
    forget: () => undefined,
  } as unknown as HookContext;
  return { ctx, sent };
}

const request = (type: string, body: Record<string, unknown> = {}) => ({ channel: "webshepherd", dir: "request", id: "r1", type, ...body }) as HookRequest;

test("the hook is silent while it is off", async () => {
  const { ctx, sent } = await context(false);
  for (const type of ["status", "session.start", "action"]) {
    assert.equal(await handleHook(ctx, { tabId: 1, url: `${A}/`, origin: A }, request(type, { key: KEY, intent: "x" })), null);
  }
  assert.deepEqual(sent, []);
});

test("only the key's holder on the session's origin reaches the session", async () => {
  const { ctx, sent } = await context(true);
  const on = (origin: string) => ({ tabId: 1, url: `${origin}/`, origin });
  const status = await handleHook(ctx, on(A), request("status"));
  assert.deepEqual([status?.type, status?.session_id], ["status", null]); // no key: no session id
  const keyed = await handleHook(ctx, on(A), request("status", { key: KEY }));
  assert.equal(keyed?.session_id, "s1");
  const noKey = await handleHook(ctx, on(A), request("action", { action: "click('1')" }));
  assert.equal(noKey?.code, "unauthorized");
  const wrongKey = await handleHook(ctx, on(A), request("session.end", { key: "z".repeat(43), outcome: "success" }));
  assert.equal(wrongKey?.code, "no_session");
  const B = "http://localhost:8000";
  const elsewhere = await handleHook(ctx, on(B), request("action", { key: KEY, action: "click('1')" }));
  assert.equal(elsewhere?.code, "no_session");
  assert.equal((await handleHook(ctx, on(B), request("status", { key: KEY })))?.session_id, null);
  assert.deepEqual(sent, []); // nothing reached the daemon
  const ok = await handleHook(ctx, on(A), request("action", { key: KEY, action: "click('1')" }));
  assert.equal(ok?.type, "action.recorded");
  assert.deepEqual(sent, [{ type: "action", session_id: "s1", action: "click('1')", thought: null, source: "agent" }]);
});

test("replies are signed: signed is the reply's JSON without signed and mac, mac its HMAC-SHA256", async () => {
  const reply: HookReply = { channel: "webshepherd", dir: "reply", id: "ws-1", type: "scored", best: 0, signed: "old", mac: "old" };
  const out = await signReply(reply, "reply-key");
  const body = JSON.parse(out.signed as string) as Record<string, unknown>;
  assert.deepEqual(body, { channel: "webshepherd", dir: "reply", id: "ws-1", type: "scored", best: 0 });
  assert.equal(out.mac, createHmac("sha256", "reply-key").update(out.signed as string).digest("hex"));
  assert.notEqual(out.mac, createHmac("sha256", "other").update(out.signed as string).digest("hex"));
});

// the same vector as tests/protocol/client/test_page_hook.py: the SDK's canonical JSON and digest
const VECTOR = { id: "ws-1", type: "score", key: KEY, candidates: [{ action: "click('12')", thought: "é\u2028\n" }], samples: 1, approval: "never", z: [1.5e-7, 1e21, 100, -0.5, true, null], "\u{1F600}": 1, "\uFFFF": 2 };
const VECTOR_JSON =
  '{"approval":"never","candidates":[{"action":"click(\'12\')","thought":"é\u2028\\n"}],"id":"ws-1","key":"' +
  KEY +
  '","samples":1,"type":"score","z":[1.5e-7,1e+21,100,-0.5,true,null],"\u{1F600}":1,"\uFFFF":2}';

test("canonical JSON: keys sorted by UTF-16 code units at every level, JSON.stringify's strings and numbers", async () => {
  assert.equal(canonicalJson(VECTOR), VECTOR_JSON);
  assert.equal(canonicalJson({ b: { d: 1, c: undefined }, a: [] }), '{"a":[],"b":{"d":1}}');
  const digest = createHash("sha256").update(VECTOR_JSON, "utf8").digest("hex");
  assert.equal(await requestDigest(VECTOR as unknown as HookRequest), digest);
});

test("a signed reply names the request it answers; another body under the same id and key is another request", async () => {
  const { ctx } = await context(true);
  const tab = ctx.sessions.get(1)!;
  tab.replyKey = "reply-key";
  const agents = request("action", { key: KEY, action: "fill('3', 'x')" });
  const forged = request("action", { key: KEY, action: "click('666')" });
  const a = await handleHook(ctx, { tabId: 1, url: `${A}/`, origin: A }, agents);
  const f = await handleHook(ctx, { tabId: 1, url: `${A}/`, origin: A }, forged);
  const signedA = JSON.parse(a?.signed as string) as Record<string, unknown>;
  const signedF = JSON.parse(f?.signed as string) as Record<string, unknown>;
  assert.equal(signedA.request_digest, await requestDigest(agents));
  assert.equal(signedF.request_digest, await requestDigest(forged));
  assert.notEqual(signedA.request_digest, signedF.request_digest);
  assert.equal(signedA.id, signedF.id);
});
