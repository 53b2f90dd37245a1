import assert from "node:assert/strict";
import { test } from "node:test";
import { readConnectFields, splitField } from "../src/settings.js";

const URL = "ws://127.0.0.1:8765/v1";
const TOKEN = "abcDEF123_-xyz";

test("the URL#TOKEN form in either field gives the URL without the token, and the token", () => {
  assert.deepEqual(readConnectFields(`${URL}#${TOKEN}`, ""), { ok: true, url: URL, token: TOKEN });
  assert.deepEqual(readConnectFields(`  ${URL}#${TOKEN}\n`, TOKEN), { ok: true, url: URL, token: TOKEN });
  assert.deepEqual(readConnectFields("ws://old:1/v1", `${URL}#${TOKEN}`), { ok: true, url: URL, token: TOKEN });
  assert.deepEqual(readConnectFields(URL, ` ${TOKEN} `), { ok: true, url: URL, token: TOKEN });
  assert.deepEqual(readConnectFields("wss://shepherd.example:443/v1", TOKEN), { ok: true, url: "wss://shepherd.example:443/v1", token: TOKEN });
  assert.deepEqual(readConnectFields(URL, ""), { ok: true, url: URL, token: "" }); // saved; the popup says "no token"
});

test("splitting a field as it is pasted", () => {
  assert.deepEqual(splitField(`${URL}#${TOKEN}`), { url: URL, token: TOKEN });
  assert.deepEqual(splitField(URL), { url: URL });
  assert.deepEqual(splitField(TOKEN), { token: TOKEN });
  assert.deepEqual(splitField("  "), {});
});

test("what is refused, in words, never repeating the token", () => {
  const refused = (url: string, token: string, words: RegExp) => {
    const r = readConnectFields(url, token);
    assert.equal(r.ok, false, `${url} | ${token}`);
    if (r.ok) return;
    assert.match(r.error, words);
    assert.ok(!r.error.includes(TOKEN), r.error);
  };
  refused(`http://127.0.0.1:8765/v1#${TOKEN}`, "", /starts with ws:\/\/ or wss:\/\/ \(not http:\/\/\)/);
  refused(`${URL}#${TOKEN}`, "another-token", /two different tokens/);
  refused(`${URL}#${TOKEN}`, `ws://elsewhere:1/v1#${TOKEN}`, /two different daemon URLs/);
  refused(TOKEN, "", /Daemon URL field holds no URL/);
  refused("", TOKEN, /daemon URL is empty/);
  refused(`${URL}#`, "", /nothing after #/);
  refused(URL, URL, /Token field holds a URL without a token/);
  refused(URL, `${TOKEN} ${TOKEN}`, /token has spaces/);
  refused(`ws://user:${TOKEN}@127.0.0.1:8765/v1`, "", /no user or password/);
  refused("ws://", TOKEN, /not a URL|names no host/);
});
