import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { commitKind, matchingCommit, dataUrlSize, digestText, downloadFields, downloadOrigin, heldRequest, isAttachment, parseQsl, requestDigest, requestFields, unquote, urlOrigin, wellFormed } from "../src/commit-hold.js";
import type { HeldRequest } from "../src/protocol.gen.js";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../../..");
const V = JSON.parse(readFileSync(join(ROOT, "protocol/vectors/commits.json"), "utf8"));
const bytes = (b64: string | null) => (b64 === null ? null : Uint8Array.from(Buffer.from(b64, "base64")));

test("origins as protocol/commits.py's url_origin gives them (the shared vectors)", () => {
  assert.ok(V.origins.length >= 10);
  for (const o of V.origins) assert.equal(urlOrigin(o.url), o.origin, o.url);
});

test("the browser's canonical host: upper case, IDN and a default port compare equal", () => {
  assert.equal(urlOrigin("http://SHOP.test:80/x"), "http://shop.test");
  assert.equal(urlOrigin("https://bücher.example/"), "https://xn--bcher-kva.example");
});

test("what a request commits (the shared vectors)", () => {
  assert.ok(V.kinds.length >= 10);
  for (const k of V.kinds) {
    const got = commitKind(k.method, k.url, { topLevelNavigation: k.top_level_navigation, sessionOrigin: k.session_origin, download: k.download });
    assert.equal(got, k.kind, JSON.stringify(k));
  }
});

test("the operator's GETs that commit, matched as matching_commit matches them (the shared vectors)", () => {
  const { patterns, cases } = V.patterns;
  assert.ok(cases.length >= 10);
  for (const c of cases) {
    assert.equal(matchingCommit(c.method, c.url, patterns) !== null, c.matches, JSON.stringify(c));
    const got = commitKind(c.method, c.url, { topLevelNavigation: false, sessionOrigin: null, commits: patterns });
    assert.equal(got, c.kind, JSON.stringify(c));
  }
  assert.equal(commitKind("GET", "https://shop.example/cart/remove", { topLevelNavigation: false, sessionOrigin: null }), null);
});

test("fields read from a body as request_fields reads them (the shared vectors)", () => {
  assert.ok(V.fields.length >= 10);
  for (const f of V.fields) {
    const got = requestFields(bytes(f.body_b64), f.content_type);
    assert.deepEqual(got.fields, f.fields, `${f.content_type}: ${Buffer.from(f.body_b64, "base64").toString().slice(0, 60)}`);
    assert.equal(got.size, f.body_bytes);
  }
});

test("held requests and their digests match the daemon's byte for byte (the shared vectors)", async () => {
  assert.ok(V.held.length >= 3);
  for (const h of V.held) {
    const i = h.input;
    const req = heldRequest({
      method: i.method,
      url: i.url,
      kind: i.kind,
      topLevel: i.top_level,
      body: bytes(i.body_b64),
      contentType: i.content_type,
      pageUrl: i.page_url,
      trigger: i.trigger,
      element: i.element,
    });
    assert.deepEqual(req, h.request, i.url);
    assert.equal(await requestDigest(h.request as HeldRequest), h.digest, i.url);
  }
});

test("a digest changes with any field of what would be sent", async () => {
  const base = V.held[0].request as HeldRequest;
  const d = await requestDigest(base);
  const fields = base.fields ?? [];
  const changed: HeldRequest[] = [
    { ...base, url: `${base.url}?x` },
    { ...base, method: "PUT" },
    { ...base, body_bytes: (base.body_bytes ?? 0) + 1 },
    { ...base, fields: fields.map((f, n) => (n === 0 ? { ...f, value: `${f.value}1` } : f)) },
  ];
  for (const c of changed) assert.notEqual(await requestDigest(c), d);
  // what is shown only (the page, the trigger) is not part of it
  assert.equal(await requestDigest({ ...base, page_url: "https://else.test/", trigger: null }), d);
  assert.equal(digestText(base).includes(" "), false);
});

test("Python's unquote and parse_qsl: malformed escapes kept, bad UTF-8 replaced, blanks kept", () => {
  assert.equal(unquote("%E2%82%AC%zz%"), "€%zz%");
  assert.equal(unquote("é%41"), "éA");
  assert.deepEqual(parseQsl("a&b=&=c&&d=1=2"), [["a", ""], ["b", ""], ["", "c"], ["d", "1=2"]]);
});

test("a download is read from Content-Disposition; lone surrogates never reach the wire", () => {
  assert.equal(isAttachment([{ name: "Content-Disposition", value: 'attachment; filename="r.csv"' }]), true);
  assert.equal(isAttachment([{ name: "content-disposition", value: "inline" }]), false);
  assert.equal(isAttachment(undefined), false);
  assert.equal(wellFormed("a\ud800b\udc00c\ud83d\ude00"), "a\ufffdb\ufffdc\ud83d\ude00");
});

test("a data: URL's size is its payload's, decoded (base64 or percent-encoded)", () => {
  assert.equal(dataUrlSize("data:text/plain,hi"), 2);
  assert.equal(dataUrlSize("data:text/plain,h%C3%A9"), 3);
  assert.equal(dataUrlSize("data:text/plain;charset=utf-8,é"), 2);
  assert.equal(dataUrlSize("data:application/octet-stream;base64,aGVsbG8="), 5);
  assert.equal(dataUrlSize("data:;base64,aGVsbG8h"), 6);
  assert.equal(dataUrlSize("https://shop.test/a.zip"), null);
});

test("a download's origin: a blob: URL names its own, a data: URL none", () => {
  assert.equal(downloadOrigin("blob:http://127.0.0.1:8000/5f1c-aa"), "http://127.0.0.1:8000");
  assert.equal(downloadOrigin("https://Shop.test/a.zip"), "https://shop.test");
  assert.equal(downloadOrigin("data:text/plain,hi"), null);
});

test("a download's card lists the file's name, type and size", () => {
  assert.deepEqual(downloadFields("/home/p/Downloads/report.zip", "application/zip", 1200), [
    { name: "file", value: "report.zip" },
    { name: "type", value: "application/zip" },
    { name: "size", value: "1200 bytes" },
  ]);
  assert.deepEqual(downloadFields("", "", null).map((f) => f.value), ["(not named yet)", "unknown", "unknown"]);
  const req = heldRequest({ method: "GET", url: "data:text/plain,hi", kind: "download", fields: downloadFields("d.txt", "text/plain", 2) });
  assert.deepEqual(req.fields, downloadFields("d.txt", "text/plain", 2));
  assert.equal(req.body_bytes, 0);
  assert.equal(req.origin, null);
});
