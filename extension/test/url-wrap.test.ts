import assert from "node:assert/strict";
import { test } from "node:test";
import { urlPieces } from "../src/url-wrap.js";

test("a daemon URL wraps after the scheme and its path's slashes, never inside host:port", () => {
  assert.deepEqual(urlPieces("ws://127.0.0.1:8765/v1"), ["ws://", "127.0.0.1:8765/", "v1"]);
  assert.deepEqual(urlPieces("ws://[::1]:8765/v1"), ["ws://", "[::1]:8765/", "v1"]);
  assert.deepEqual(urlPieces("wss://127.0.0.1:8765"), ["wss://", "127.0.0.1:8765"]);
});

test("a name wraps after its dots, its last label stays with the port", () => {
  assert.deepEqual(urlPieces("https://shop.example.com:8443/cart/checkout?item=3&qty=1"), [
    "https://",
    "shop.",
    "example.",
    "com:8443/",
    "cart/",
    "checkout?",
    "item=3&",
    "qty=1",
  ]);
});

test("a path's dots and runs of separators", () => {
  assert.deepEqual(urlPieces("http://h/a.b//c?x"), ["http://", "h/", "a.", "b//", "c?", "x"]);
  assert.deepEqual(urlPieces("/relative/path.html"), ["/", "relative/", "path.", "html"]);
});

test("joined, the pieces are the text again", () => {
  for (const t of ["", "x", "ws://127.0.0.1:8765/v1", "https://a.b.c/?q=1&r=2#frag", "mailto:a@b.c", "http://u:p@h.io:9/"]) {
    assert.equal(urlPieces(t).join(""), t);
  }
});
