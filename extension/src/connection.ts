/**
 * The service worker's one WebSocket to the daemon: hello with the token,
 * requests matched to replies by id, events to a listener, an application
 * `ping` every 20 s (which keeps an MV3 worker alive), reconnect with backoff.
 */
import { backoffDelay } from "./backoff.js";
import type { ClientMessage, ServerMessage } from "./protocol.gen.js";

export type ConnState = "connecting" | "connected" | "disconnected" | "unauthorized";
type Outgoing = ClientMessage extends infer M ? (M extends { id: string } ? Omit<M, "id"> : never) : never;

export interface ConnectionOptions {
  url: string;
  token: string;
  /** The person's approver credential from pairing, read at each hello ("": none; this
   *  browser then decides nothing). */
  approver?: () => string;
  version: string;
  onEvent: (msg: ServerMessage) => void;
  onState: (state: ConnState, detail?: string) => void;
  /** Called after every successful hello (to resubscribe). */
  onOpen: () => void;
  keepaliveMs?: number;
}

export class DaemonConnection {
  private ws: WebSocket | null = null;
  private seq = 0;
  private attempt = 0;
  private pending = new Map<string, { resolve: (m: ServerMessage) => void; reject: (e: Error) => void }>();
  private keepalive: ReturnType<typeof setInterval> | undefined;
  private retry: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  state: ConnState = "disconnected";
  /** The daemon took this browser's approver credential (welcome.approver, or a `paired` reply). */
  paired = false;

  constructor(private readonly opts: ConnectionOptions) {}

  start(): void {
    this.stopped = false;
    this.open();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    this.ws?.close(1000, "stopped");
    this.teardown("stopped");
  }

  /** Sends a request and resolves with its reply (an `error` reply rejects). */
  request<R extends ServerMessage = ServerMessage>(msg: Outgoing, timeoutMs = 600_000): Promise<R> {
    const ws = this.ws;
    if (!ws || this.state !== "connected") return Promise.reject(new Error("not connected to the daemon"));
    const id = `x${++this.seq}`;
    return new Promise<R>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${msg.type}: no reply in ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (m) => {
          clearTimeout(timer);
          if (m.type === "error") reject(Object.assign(new Error(m.message), { code: m.code }));
          else resolve(m as R);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      ws.send(JSON.stringify({ ...msg, id }));
    });
  }

  private setState(s: ConnState, detail?: string) {
    this.state = s;
    this.opts.onState(s, detail);
  }

  private open() {
    if (!this.opts.token) {
      this.setState("unauthorized", "no token: paste `webshepherd token` under “Connect to the daemon” in the options page");
      return;
    }
    this.setState("connecting");
    let ws: WebSocket;
    try {
      ws = new WebSocket(this.opts.url);
    } catch (err) {
      this.setState("disconnected", String(err));
      this.schedule();
      return;
    }
    this.ws = ws;
    const helloId = `h${++this.seq}`;
    ws.onopen = () => {
      ws.send(
        JSON.stringify({
          type: "hello",
          id: helloId,
          protocol: 1,
          token: this.opts.token,
          ...(this.opts.approver?.() ? { approver: this.opts.approver() } : {}),
          client: { name: "webshepherd-extension", version: this.opts.version, role: "extension" },
        }),
      );
    };
    ws.onmessage = (ev) => {
      let msg: ServerMessage;
      try {
        msg = JSON.parse(String(ev.data)) as ServerMessage;
      } catch {
        return;
      }
      const id = (msg as { id?: string | null }).id;
      if (id === helloId) {
        if (msg.type === "welcome") {
          this.attempt = 0;
          this.paired = msg.approver === true;
          this.setState("connected");
          this.keepalive = setInterval(() => void this.request({ type: "ping" }, 10_000).catch(() => undefined), this.opts.keepaliveMs ?? 20_000);
          this.opts.onOpen();
        } else {
          this.setState("unauthorized", msg.type === "error" ? msg.message : "refused");
        }
        return;
      }
      if (id && this.pending.has(id)) {
        const p = this.pending.get(id)!;
        this.pending.delete(id);
        p.resolve(msg);
        return;
      }
      this.opts.onEvent(msg);
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.teardown(`closed (${ev.code})`);
      if (this.state !== "unauthorized") this.setState("disconnected", `closed (${ev.code})`);
      if (ev.code !== 1008) this.schedule();
    };
    ws.onerror = () => undefined; // onclose follows
  }

  private teardown(why: string) {
    clearInterval(this.keepalive);
    this.paired = false;
    this.ws = null;
    for (const p of this.pending.values()) p.reject(new Error(`connection ${why}`));
    this.pending.clear();
  }

  private schedule() {
    if (this.stopped) return;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => this.open(), backoffDelay(this.attempt++));
  }
}
