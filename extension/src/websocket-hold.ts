/**
 * WebSocket messages of a held tab wait like its requests (issue 49): CDP's Fetch domain never
 * sees a socket's frames, so a page-world wrapper (socket-hold-page.ts), injected into every
 * document of the tab before its scripts (Page.addScriptToEvaluateOnNewDocument, at once into
 * the documents already open), pauses each `send` and asks through a CDP binding. Each message
 * is a `commit.check` (method `WEBSOCKET`, the message as its field) through the gate's one
 * way of asking; it goes only when approved, and refused its socket closes (4008). A tab that
 * stops holding refuses what waits and lets later messages go unasked.
 */
import type { CdpSend } from "./capture/cdp.js";
import { heldRequest } from "./commit-hold.js";
import type { HeldRequest } from "./protocol.gen.js";
import { holdSocketsSource, SOCKET_ANSWER, SOCKET_BINDING, type SocketAsk, type SocketVerdict } from "./socket-hold-page.js";

/** Where the page-world key is kept across a worker's restart (its pages keep their wrapper). */
const KEY = "socketHoldKey";

/** What Runtime.bindingCalled carries. */
export interface BindingCalled {
  name: string;
  payload: string;
  executionContextId: number;
}

/** The message as the card shows it: the socket's URL, its text (cut) and its size. */
export function socketRequest(ask: SocketAsk, pageUrl: string | null, trigger: { action: string; element: string | null } | null): HeldRequest {
  return heldRequest({
    method: "WEBSOCKET",
    url: ask.url,
    kind: "write",
    pageUrl,
    trigger: trigger?.action ?? null,
    element: trigger?.element ?? null,
    fields: [{ name: "message", value: String(ask.shown).slice(0, 512) }],
  });
}

/** Reads the binding's payload; null when it is not the wrapper's (page script may call it). */
export function readAsk(payload: string): SocketAsk | null {
  try {
    const a = JSON.parse(payload) as Partial<SocketAsk>;
    if (typeof a.id !== "number" || typeof a.url !== "string" || typeof a.shown !== "string" || typeof a.bytes !== "number") return null;
    return { id: a.id, url: a.url.slice(0, 8192), shown: a.shown, bytes: a.bytes };
  } catch {
    return null;
  }
}

export class SocketHold {
  private key: Promise<string> | null = null;
  /** Held tabs -> their script's identifier (removed when the tab stops holding). */
  private readonly scripts = new Map<number, string>();

  /** The page-world key: made once per browser session, kept in `chrome.storage.session`. */
  private pageKey(): Promise<string> {
    this.key ??= (async () => {
      const got = await chrome.storage.session.get(KEY);
      if (typeof got[KEY] === "string") return got[KEY] as string;
      const bytes = crypto.getRandomValues(new Uint8Array(16));
      const key = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
      await chrome.storage.session.set({ [KEY]: key });
      return key;
    })();
    return this.key;
  }

  /** The tab's documents, present and future, wrap their sockets' `send`. */
  async hold(tabId: number, send: CdpSend): Promise<void> {
    if (this.scripts.has(tabId)) return;
    const key = await this.pageKey();
    await send("Runtime.addBinding", { name: SOCKET_BINDING });
    const added = await send<{ identifier: string }>("Page.addScriptToEvaluateOnNewDocument", { source: holdSocketsSource(key), runImmediately: true });
    this.scripts.set(tabId, added.identifier);
    await this.tell(send, key, 0, "on"); // a page the tab held before: its wrapper holds again
  }

  /** The tab stops holding: what waits is refused, later messages go unasked. */
  async release(tabId: number, send: CdpSend): Promise<void> {
    const identifier = this.scripts.get(tabId);
    if (identifier === undefined) return;
    this.scripts.delete(tabId);
    await send("Page.removeScriptToEvaluateOnNewDocument", { identifier }).catch(() => undefined);
    await this.tell(send, await this.pageKey(), 0, "off");
  }

  /** The debugger went away: nothing to remove. */
  detached(tabId: number): void {
    this.scripts.delete(tabId);
  }

  /** A wrapper asks (Runtime.bindingCalled): `decide` says whether the message may go. */
  async called(send: CdpSend, event: BindingCalled, decide: (ask: SocketAsk) => Promise<boolean>): Promise<void> {
    if (event.name !== SOCKET_BINDING) return;
    const ask = readAsk(event.payload);
    if (ask === null) return;
    let go = false;
    try {
      go = await decide(ask);
    } catch (err) {
      console.warn("webshepherd: a WebSocket message failed closed", err);
    }
    await this.tell(send, await this.pageKey(), ask.id, go ? "send" : "refuse", event.executionContextId);
  }

  private async tell(send: CdpSend, key: string, id: number, verdict: SocketVerdict, contextId?: number): Promise<void> {
    const expression = `globalThis[${JSON.stringify(SOCKET_ANSWER)}]?.(${JSON.stringify(key)}, ${id}, ${JSON.stringify(verdict)})`;
    await send("Runtime.evaluate", contextId === undefined ? { expression } : { expression, contextId }).catch(() => undefined);
  }
}
