import assert from "node:assert/strict";
import { test } from "node:test";
import vm from "node:vm";
import { holdSocketsSource, SOCKET_ANSWER, SOCKET_BINDING, SOCKET_REFUSED, SOCKET_REFUSED_CODE } from "../src/socket-hold-page.js";
import { readAsk, socketRequest } from "../src/websocket-hold.js";

/** A page world with a WebSocket whose native send and close record what they get. */
function world() {
  const sent: unknown[] = [];
  const closed: [number, string][] = [];
  const asked: string[] = [];
  class WebSocket {
    constructor() {
      Object.assign(this, { _url: "ws://shop.test/live", _readyState: 1 });
    }
    send(data: unknown) {
      sent.push(data);
    }
    close(code: number, reason: string) {
      closed.push([code, reason]);
      Object.assign(this, { _readyState: 3 });
    }
  }
  for (const name of ["url", "readyState"]) {
    Object.defineProperty(WebSocket.prototype, name, {
      get(this: Record<string, unknown>) {
        return this[`_${name}`];
      },
    });
  }
  const g: Record<string, unknown> = { WebSocket, TextEncoder, TextDecoder, Blob, ArrayBuffer, JSON, Object, Map, WeakMap, Promise, Uint8Array };
  g[SOCKET_BINDING] = (payload: string) => asked.push(payload);
  const context = vm.createContext(g);
  vm.runInContext(`globalThis.globalThis = globalThis;`, context);
  vm.runInContext(holdSocketsSource("k3y"), context);
  const socket = vm.runInContext(`new WebSocket()`, context) as { send(d: unknown): void };
  const answer = (key: string, id: number, verdict: string) => (g[SOCKET_ANSWER] as (k: string, i: number, v: string) => void)(key, id, verdict);
  const settle = () => new Promise((r) => setTimeout(r, 10));
  return { sent, closed, asked, socket, answer, settle, g };
}

test("a message waits for its answer; only the extension's key releases it, once", async () => {
  const w = world();
  w.socket.send("order=usb-c cable");
  await w.settle();
  assert.deepEqual(w.sent, []);
  const ask = readAsk(w.asked[0]!)!;
  assert.deepEqual(ask, { id: 1, url: "ws://shop.test/live", shown: "order=usb-c cable", bytes: 17 });
  w.answer("page-guess", ask.id, "send"); // page script without the key
  await w.settle();
  assert.deepEqual(w.sent, []);
  w.answer("k3y", ask.id, "send");
  w.answer("k3y", ask.id, "send"); // a second answer releases nothing more
  await w.settle();
  assert.deepEqual(w.sent, ["order=usb-c cable"]);
});

test("refused, the queue is dropped and the socket closes with 4008", async () => {
  const w = world();
  w.socket.send("one");
  w.socket.send("two");
  await w.settle();
  assert.equal(w.asked.length, 1); // in order: the second waits for the first
  w.answer("k3y", 1, "refuse");
  await w.settle();
  assert.deepEqual(w.sent, []);
  assert.deepEqual(w.closed, [[SOCKET_REFUSED_CODE, SOCKET_REFUSED]]);
});

test("a hold that ends refuses what waits and lets later messages go; the page cannot undo the wrapper", async () => {
  const w = world();
  w.socket.send("waiting");
  await w.settle();
  w.answer("k3y", 0, "off");
  await w.settle();
  assert.deepEqual(w.closed, [[SOCKET_REFUSED_CODE, SOCKET_REFUSED]]);
  const later = vm.runInContext(`new WebSocket()`, w.g) as { send(d: unknown): void };
  later.send("after");
  assert.deepEqual(w.sent, ["after"]);
  assert.equal(w.asked.length, 1);
  assert.throws(() => vm.runInContext(`"use strict"; globalThis.${SOCKET_ANSWER} = () => {}`, vm.createContext(w.g)));
});

test("the card's request: WEBSOCKET, a write, the message as its field; other payloads are not asks", () => {
  const req = socketRequest({ id: 1, url: "ws://shop.test/live", shown: "order=1", bytes: 7 }, "http://shop.test/", null);
  assert.equal(req.method, "WEBSOCKET");
  assert.equal(req.kind, "write");
  assert.deepEqual(req.fields, [{ name: "message", value: "order=1" }]);
  assert.equal(req.page_url, "http://shop.test/");
  for (const bad of ["", "{}", "[1]", '{"id":"1","url":"x","shown":"","bytes":0}']) assert.equal(readAsk(bad), null);
});
