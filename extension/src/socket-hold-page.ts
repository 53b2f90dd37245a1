/**
 * The page-world half of the WebSocket hold (websocket-hold.ts injects it into every document
 * of a held tab before the page's scripts). `WebSocket.prototype.send` queues each message and
 * asks through a CDP binding; a message goes to the native `send` only when the extension
 * answers `send` with its key. Refused, the queue is dropped and the socket closed.
 *
 * Its limits, said plainly (docs/security.md): it lives in the page's own world, so page
 * script sees the wrapper and can call the binding (which only asks); it cannot forge an
 * answer (the key is not in the page) nor reach the native `send` (kept in this closure).
 * A worker's or an out-of-process frame's sockets are not wrapped. A page closes with 4008,
 * not 1008 (a page may only close with 1000 or 3000-4999).
 */

/** The binding the wrapper asks through (Runtime.addBinding). */
export const SOCKET_BINDING = "__webshepherdSocketAsk";
/** The wrapper's answer function (a global the page cannot replace). */
export const SOCKET_ANSWER = "__webshepherdSocketAnswer";
/** The close code a refused message's socket gets (1008 "policy violation" in the range a page may use). */
export const SOCKET_REFUSED_CODE = 4008;
/** Why the page's socket closed (the close frame's reason). */
export const SOCKET_REFUSED = "webshepherd: a message on this WebSocket was refused";
/** How many characters of a message the card shows. */
const SHOWN = 512;

/** What the wrapper asks about one message (the binding's payload, JSON). */
export interface SocketAsk {
  id: number;
  url: string;
  shown: string;
  bytes: number;
}

/** The answer the extension gives (`off`: the tab stopped holding, waiting messages are
 * refused and later ones go unasked; `on`: it holds again). */
export type SocketVerdict = "send" | "refuse" | "off" | "on";

/** Runs in the page's world, once per document: wraps `WebSocket.prototype.send`. Kept free
 * of outside names: it is injected as its source text. */
export function holdSockets(binding: string, answer: string, key: string, code: number, reason: string, shownChars: number): void {
  const g = globalThis as unknown as Record<string, unknown>;
  const Native = g.WebSocket as typeof WebSocket | undefined;
  const ask = g[binding] as ((payload: string) => void) | undefined;
  if (typeof Native !== "function" || typeof ask !== "function" || answer in g) return;
  const proto = Native.prototype;
  const nativeSend = proto.send;
  const close = proto.close;
  const urlOf = Object.getOwnPropertyDescriptor(proto, "url")!.get!;
  const stateOf = Object.getOwnPropertyDescriptor(proto, "readyState")!.get!;
  const encode = TextEncoder.prototype.encode.bind(new TextEncoder());
  const decode = TextDecoder.prototype.decode.bind(new TextDecoder());
  const stringify = JSON.stringify;
  type Data = string | ArrayBufferLike | Blob | ArrayBufferView;
  const queues = new WeakMap<WebSocket, { busy: boolean; items: Data[] }>();
  const waiting = new Map<number, (verdict: string) => void>();
  let next = 1;
  let off = false;
  Object.defineProperty(g, answer, {
    value: (k: string, id: number, verdict: string) => {
      if (k !== key) return;
      if (verdict === "on") {
        off = false;
        return;
      }
      if (verdict === "off") {
        off = true;
        for (const [n, done] of waiting) (waiting.delete(n), done("refuse"));
        return;
      }
      const done = waiting.get(id);
      if (done) (waiting.delete(id), done(verdict));
    },
    writable: false,
    configurable: false,
    enumerable: false,
  });
  const bytesOf = async (data: Data): Promise<Uint8Array> => {
    if (typeof data === "string") return encode(data);
    if (data instanceof Blob) return new Uint8Array(await data.arrayBuffer());
    if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    return new Uint8Array(data as ArrayBuffer);
  };
  const pump = async (socket: WebSocket, q: { busy: boolean; items: Data[] }): Promise<void> => {
    if (q.busy) return;
    q.busy = true;
    while (q.items.length > 0) {
      const data = q.items[0] as Data;
      let verdict = "refuse";
      try {
        const bytes = await bytesOf(data);
        const shown = typeof data === "string" ? data.slice(0, shownChars) : decode(bytes.slice(0, shownChars));
        const id = next++;
        verdict = off
          ? "refuse"
          : await new Promise<string>((done) => {
              waiting.set(id, done);
              ask(stringify({ id, url: urlOf.call(socket), shown, bytes: bytes.length }));
            });
      } catch {
        verdict = "refuse";
      }
      q.items.shift();
      if (verdict === "send") {
        nativeSend.call(socket, data as string);
        continue;
      }
      q.items.length = 0;
      close.call(socket, code, reason);
    }
    q.busy = false;
  };
  Object.defineProperty(proto, "send", {
    value: function send(this: WebSocket, data: Data): void {
      // not open (the native send throws or drops it), or no longer held: as the browser does
      if (stateOf.call(this) !== 1 || off) return nativeSend.call(this, data as string);
      let q = queues.get(this);
      if (!q) queues.set(this, (q = { busy: false, items: [] }));
      q.items.push(data);
      void pump(this, q);
    },
    writable: false,
    configurable: false,
  });
}

/** The source injected into a held tab's documents (Page.addScriptToEvaluateOnNewDocument). */
export function holdSocketsSource(key: string): string {
  const args = [SOCKET_BINDING, SOCKET_ANSWER, key, SOCKET_REFUSED_CODE, SOCKET_REFUSED, SHOWN].map((a) => JSON.stringify(a)).join(", ");
  return `(${holdSockets.toString()})(${args});`;
}
