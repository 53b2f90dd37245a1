/**
 * The page-side hook: an agent that runs JavaScript in its page (Playwright, Selenium,
 * puppeteer, raw CDP) talks to the extension with `window.postMessage`:
 *
 *   page -> extension  {channel: "webshepherd", dir: "request", id, type, key, ...}
 *   extension -> page  {channel: "webshepherd", dir: "reply", id, type, ...}
 *
 * The hook is off unless the settings turn it on (`pageHook`, set by the agent's launcher or
 * in the options page); off, the extension neither answers nor says it is there. Every
 * request but `status` carries `key`: a key the agent got from the daemon over its own
 * connection (`hook.grant`). `session.start` {key, intent, checklist?, start_url?, agent?}
 * needs a key without a session; `attach` {key} one for the agent's session. Either binds
 * the tab to the session, the key and the page's origin; `observe`, `score`
 * {candidates, samples?, approval?}, `action` {action, thought?} and `session.end`
 * {outcome, answer?} are answered only with that key, from that origin (another origin the
 * tab navigates to gets nothing; the agent may `attach` there again with its key). `status`
 * says whether the extension is connected, and the session only to the key's holder.
 * A failure replies `{type: "error", code, message}`.
 *
 * Replies are signed, so that the agent can tell them from a page script's forgery (a script
 * of the same origin overhears the request and its key): once the key is redeemed, a reply
 * also carries `signed` (the reply's JSON text, without `signed` and `mac`) and `mac`
 * (HMAC-SHA256 of `signed`, hex) under the reply key the daemon gave the agent with its key
 * (`hook.granted.reply_key`) and the extension when it redeemed it. The page never sees that
 * key; the agent trusts only `signed`, and only when `mac` checks out. A signed reply also
 * names the request it answers, `request_digest` (SHA-256 hex of the request's
 * `canonicalJson` as the extension got it: channel, dir, id, type, key and body): a page
 * script that re-posts the agent's request with its own body under the overheard id and key
 * gets a signed reply, but one that names the script's request, not the agent's.
 */
export const CHANNEL = "webshepherd";

export const HOOK_TYPES = ["session.start", "attach", "observe", "score", "action", "session.end", "status"] as const;
export type HookType = (typeof HOOK_TYPES)[number];

export interface HookRequest {
  channel: typeof CHANNEL;
  dir: "request";
  id: string;
  type: HookType;
  [key: string]: unknown;
}

export interface HookReply {
  channel: typeof CHANNEL;
  dir: "reply";
  id: string;
  type: string;
  [key: string]: unknown;
}

/** The request, if `data` is a well-formed hook request; null for anything else on the channel. */
export function parseHookRequest(data: unknown): HookRequest | null {
  if (typeof data !== "object" || data === null) return null;
  const d = data as Record<string, unknown>;
  if (d.channel !== CHANNEL || d.dir !== "request") return null;
  if (typeof d.id !== "string" || d.id === "" || d.id.length > 200) return null;
  if (!HOOK_TYPES.includes(d.type as HookType)) return null;
  return d as unknown as HookRequest;
}

export function hookError(id: string, code: string, message: string): HookReply {
  return { channel: CHANNEL, dir: "reply", id, type: "error", code, message };
}

/** The request's key if it has the shape of one (the daemon's are 43 URL-safe characters). */
export function hookKey(req: HookRequest): string | null {
  const k = req.key;
  return typeof k === "string" && /^[A-Za-z0-9_-]{16,128}$/.test(k) ? k : null;
}

/** SHA-256 of a key, hex: what a tab's binding keeps. */
export async function keyDigest(key: string): Promise<string> {
  const bytes = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key)));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * JSON with every object's keys sorted (by UTF-16 code units), no spaces, strings and numbers
 * as JSON.stringify writes them; what the agent's SDK computes too (protocol/client/page_hook.py).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(",")}}`;
}

/** SHA-256 hex of the request's canonical JSON: the `request_digest` of its signed reply. */
export async function requestDigest(req: HookRequest): Promise<string> {
  const bytes = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonicalJson(req))));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** `reply` with `signed` and `mac` (HMAC-SHA256 under `replyKey`, WebCrypto) added. */
export async function signReply(reply: HookReply, replyKey: string): Promise<HookReply> {
  const { signed: _s, mac: _m, ...body } = reply;
  const text = JSON.stringify(body);
  const enc = new TextEncoder();
  const k = await crypto.subtle.importKey("raw", enc.encode(replyKey), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const sig = new Uint8Array(await crypto.subtle.sign("HMAC", k, enc.encode(text)));
  return { ...body, signed: text, mac: Array.from(sig, (b) => b.toString(16).padStart(2, "0")).join("") } as HookReply;
}

/** The origin of a URL ("null" when it has none, e.g. about:blank or data:). */
export function originOf(url: string | undefined): string {
  try {
    return url ? new URL(url).origin : "null";
  } catch {
    return "null";
  }
}
