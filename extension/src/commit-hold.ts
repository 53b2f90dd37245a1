/**
 * What a request the browser is about to send commits (pure; protocol/commits.py's rules,
 * held to protocol/vectors/commits.json): a method other than GET, HEAD or OPTIONS (a write),
 * a safe-method request the operator named (`serve --commits`, `session.started.commits`; a
 * write too), a top-level navigation to another origin, or a download. One that does becomes a
 * `HeldRequest` (its fields read from the body the browser would send) and a `commit.check`;
 * the daemon's `commit.decided` names the request's digest, and only that request may go.
 */
import type { HeldRequest, RequestField } from "./protocol.gen.js";

export type CommitKind = HeldRequest["kind"];

/** Methods that send nothing to keep (RFC 9110's safe methods, less TRACE). */
export const SAFE_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"]);
const MAX_FIELDS = 64;
const MAX_VALUE = 512;
const MAX_NAME = 256;
const MAX_URL = 8192;

/** `scheme://host[:port]` of a URL as the browser canonicalises it; `file://` for every file
 * URL; null for others (`data:`, `blob:`, `about:`) and for what does not parse. */
export function urlOrigin(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url.trim());
  } catch {
    return null;
  }
  const scheme = u.protocol.slice(0, -1).toLowerCase();
  if (scheme === "file") return "file://";
  if (!["http", "https", "ws", "wss"].includes(scheme) || !u.hostname) return null;
  return `${scheme}://${u.host}`; // lower-case, punycode, default port dropped
}

export interface CommitContext {
  /** The page itself navigates (the main frame's document, not a frame, not a fetch). */
  topLevelNavigation: boolean;
  /** The origin the session works on (a navigation elsewhere commits); null: unknown. */
  sessionOrigin: string | null;
  /** The response would be saved as a file (read at the response stage). */
  download?: boolean;
  /** The operator's patterns of safe-method requests that commit (`session.started.commits`). */
  commits?: readonly string[];
}

/** Whether `text` is `pattern` with each `*` standing for any run of characters. */
function glob(pattern: string, text: string): boolean {
  const parts = pattern.split("*");
  if (parts.length === 1) return text === pattern;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!text.startsWith(first) || !text.endsWith(last)) return false;
  let at = first.length;
  const end = text.length - last.length;
  if (at > end) return false;
  for (const part of parts.slice(1, -1)) {
    const found = text.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

/** The first of `patterns` (`METHOD URL`, protocol/commits.py's `parse_commit_pattern`) that
 * names this request (its method, its URL as the browser sends it), or null. */
export function matchingCommit(method: string, url: string, patterns: readonly string[]): string | null {
  const upper = method.toUpperCase();
  for (const pattern of patterns) {
    const space = pattern.indexOf(" ");
    if (space < 0) continue;
    if (pattern.slice(0, space).toUpperCase() === upper && glob(pattern.slice(space + 1), url)) return pattern;
  }
  return null;
}

/** What the request commits, or null when it sends nothing to keep. */
export function commitKind(method: string, url: string, ctx: CommitContext): CommitKind | null {
  if (ctx.download) return "download";
  if (!SAFE_METHODS.has(method.toUpperCase())) return "write";
  if (matchingCommit(method, url, ctx.commits ?? []) !== null) return "write";
  if (ctx.topLevelNavigation && ctx.sessionOrigin !== null) {
    const target = urlOrigin(url);
    if (target !== null && target !== ctx.sessionOrigin) return "navigation";
  }
  return null;
}

/** Whether response headers say the body is saved as a file (`Content-Disposition: attachment`). */
export function isAttachment(headers: readonly { name: string; value: string }[] | undefined): boolean {
  return (headers ?? []).some((h) => h.name.toLowerCase() === "content-disposition" && /^\s*attachment\b/i.test(h.value));
}

/** A string with every lone surrogate replaced by U+FFFD (what UTF-8 can carry). */
export function wellFormed(text: string): string {
  return text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");
}

/** The first `limit` code points of `text` (Python's slice). */
function head(text: string, limit: number): string {
  const cps = Array.from(text);
  return cps.length <= limit ? text : cps.slice(0, limit).join("");
}

/** Python's `_cut`: at most `limit` code points, the last an ellipsis when cut. */
function cut(text: string, limit: number): string {
  const cps = Array.from(text);
  return cps.length <= limit ? text : cps.slice(0, limit - 1).join("") + "…";
}

const utf8 = (bytes: Uint8Array): string => new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);

/** Python's `urllib.parse.unquote` (UTF-8, errors replaced): only ASCII runs are unquoted. */
export function unquote(text: string): string {
  if (!text.includes("%")) return text;
  return text.replace(/[\x00-\x7f]+/g, (run) => {
    const bytes: number[] = [];
    for (let i = 0; i < run.length; i++) {
      const hex = run.slice(i + 1, i + 3);
      if (run[i] === "%" && /^[0-9a-fA-F]{2}$/.test(hex)) {
        bytes.push(parseInt(hex, 16));
        i += 2;
      } else {
        bytes.push(run.charCodeAt(i));
      }
    }
    return utf8(Uint8Array.from(bytes));
  });
}

/** Python's `parse_qsl(text, keep_blank_values=True)`. */
export function parseQsl(text: string): [string, string][] {
  const out: [string, string][] = [];
  for (const piece of text.split("&")) {
    if (!piece) continue;
    const eq = piece.indexOf("=");
    const [name, value] = eq < 0 ? [piece, ""] : [piece.slice(0, eq), piece.slice(eq + 1)];
    out.push([unquote(name.replace(/\+/g, " ")), unquote(value.replace(/\+/g, " "))]);
  }
  return out;
}

// -- JSON as Python reads and writes it (json.loads keeps key order; json.dumps' default form)

type PyJson = null | boolean | string | { num: string } | PyJson[] | Map<string, PyJson>;

class JsonReader {
  private i = 0;
  constructor(private readonly s: string) {}

  document(): PyJson {
    const v = this.value();
    this.ws();
    if (this.i !== this.s.length) throw new Error("extra data");
    return v;
  }

  private ws() {
    while (this.i < this.s.length && " \t\n\r".includes(this.s[this.i]!)) this.i++;
  }

  private value(): PyJson {
    this.ws();
    const c = this.s[this.i];
    if (c === "{") return this.object();
    if (c === "[") return this.array();
    if (c === '"') return this.string();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (this.s.startsWith(word, this.i)) {
        this.i += word.length;
        return v;
      }
    }
    for (const word of ["NaN", "Infinity", "-Infinity"]) {
      if (this.s.startsWith(word, this.i)) {
        this.i += word.length;
        return { num: word };
      }
    }
    const m = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?/.exec(this.s.slice(this.i));
    if (!m) throw new Error(`unexpected ${c ?? "end"}`);
    this.i += m[0].length;
    return { num: m[0] };
  }

  private object(): Map<string, PyJson> {
    const out = new Map<string, PyJson>();
    this.i++;
    this.ws();
    if (this.s[this.i] === "}") {
      this.i++;
      return out;
    }
    for (;;) {
      this.ws();
      if (this.s[this.i] !== '"') throw new Error("expected a key");
      const key = this.string();
      this.ws();
      if (this.s[this.i++] !== ":") throw new Error("expected ':'");
      out.set(key, this.value());
      this.ws();
      const c = this.s[this.i++];
      if (c === "}") return out;
      if (c !== ",") throw new Error("expected ',' or '}'");
    }
  }

  private array(): PyJson[] {
    const out: PyJson[] = [];
    this.i++;
    this.ws();
    if (this.s[this.i] === "]") {
      this.i++;
      return out;
    }
    for (;;) {
      out.push(this.value());
      this.ws();
      const c = this.s[this.i++];
      if (c === "]") return out;
      if (c !== ",") throw new Error("expected ',' or ']'");
    }
  }

  private string(): string {
    const m = /^"((?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*)"/.exec(this.s.slice(this.i));
    if (!m) throw new Error("bad string");
    this.i += m[0].length;
    return JSON.parse(m[0]) as string;
  }
}

/** Python's `repr(float(lexeme))` as `json.dumps` writes it. */
function pyFloat(lexeme: string): string {
  const x = Number(lexeme);
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "Infinity" : "-Infinity";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const sign = x < 0 ? "-" : "";
  const [mant, expText] = Math.abs(x).toExponential().split("e") as [string, string];
  const digits = mant.replace(".", "");
  const exp = Number(expText);
  const decpt = exp + 1;
  if (decpt <= -4 || decpt > 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${m}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  }
  if (decpt <= 0) return `${sign}0.${"0".repeat(-decpt)}${digits}`;
  if (decpt >= digits.length) return `${sign}${digits}${"0".repeat(decpt - digits.length)}.0`;
  return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
}

/** A number lexeme as Python writes what `json.loads` made of it (an int exactly, a float's repr). */
function pyNumber(lexeme: string): string {
  if (/^-?\d+$/.test(lexeme)) return BigInt(lexeme).toString();
  return pyFloat(lexeme);
}

/** `json.dumps(text)` (ensure_ascii). */
function pyString(text: string): string {
  let out = '"';
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    const short: Record<string, string> = { '"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f" };
    if (short[ch]) out += short[ch];
    else if (c >= 0x20 && c <= 0x7e) out += ch;
    else {
      for (let i = 0; i < ch.length; i++) out += `\\u${ch.charCodeAt(i).toString(16).padStart(4, "0")}`;
    }
  }
  return `${out}"`;
}

/** Python's `json.dumps(value)`: `, ` and `: ` separators, ASCII only. */
function pyDumps(v: PyJson): string {
  if (v === null) return "null";
  if (v === true) return "true";
  if (v === false) return "false";
  if (typeof v === "string") return pyString(v);
  if (Array.isArray(v)) return `[${v.map(pyDumps).join(", ")}]`;
  if (v instanceof Map) return `{${[...v].map(([k, x]) => `${pyString(k)}: ${pyDumps(x)}`).join(", ")}}`;
  return pyNumber(v.num);
}

function indexOf(hay: Uint8Array, needle: Uint8Array, from = 0): number {
  outer: for (let i = from; i <= hay.length - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

function multipart(body: Uint8Array, contentType: string): [string, string][] {
  let boundary = "";
  for (const part of contentType.split(";").slice(1)) {
    const p = part.trim();
    const eq = p.indexOf("=");
    const [key, value] = eq < 0 ? [p, ""] : [p.slice(0, eq), p.slice(eq + 1)];
    if (key.toLowerCase() === "boundary") boundary = value.replace(/^"+|"+$/g, "");
  }
  if (!boundary || /[^\x00-\xff]/.test(boundary)) return [];
  const sep = Uint8Array.from(`--${boundary}`, (c) => c.charCodeAt(0));
  const chunks: Uint8Array[] = [];
  let at = indexOf(body, sep);
  while (at >= 0) {
    const start = at + sep.length;
    const next = indexOf(body, sep, start);
    chunks.push(body.subarray(start, next < 0 ? body.length : next));
    at = next;
  }
  const out: [string, string][] = [];
  const blank = Uint8Array.from([13, 10, 13, 10]);
  for (const chunk of chunks) {
    const split = indexOf(chunk, blank);
    const headBytes = split < 0 ? chunk : chunk.subarray(0, split);
    let value = split < 0 ? new Uint8Array() : chunk.subarray(split + 4);
    let name: string | null = null;
    let filename: string | null = null;
    for (const line of utf8(headBytes).split("\r\n")) {
      if (!line.toLowerCase().startsWith("content-disposition:")) continue;
      for (const item of line.split(";").slice(1)) {
        const it = item.trim();
        const eq = it.indexOf("=");
        const [k, v] = eq < 0 ? [it, ""] : [it.slice(0, eq), it.slice(eq + 1)];
        if (k === "name") name = v.replace(/^"+|"+$/g, "");
        else if (k === "filename") filename = v.replace(/^"+|"+$/g, "");
      }
    }
    if (name === null) continue;
    let end = value.length;
    while (end > 0 && [13, 10, 45].includes(value[end - 1]!)) end--;
    value = value.subarray(0, end);
    out.push([name, filename !== null ? `(file ${filename})` : utf8(value)]);
  }
  return out;
}

/** The fields a body would send (a urlencoded or multipart form's, a JSON object's top level;
 * values truncated) and the body's size: protocol/commits.py's `request_fields`. */
export function requestFields(body: Uint8Array | null, contentType: string | null): { fields: RequestField[]; size: number } {
  if (!body || body.length === 0) return { fields: [], size: 0 };
  const ctype = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  const text = utf8(body);
  let pairs: [string, string][] = [];
  if (ctype === "application/x-www-form-urlencoded" || (!ctype && text.includes("="))) {
    pairs = parseQsl(text);
  } else if (ctype === "multipart/form-data") {
    pairs = multipart(body, contentType ?? "");
  } else if (ctype.endsWith("json") || text.trimStart().startsWith("{")) {
    let data: PyJson | undefined;
    try {
      data = new JsonReader(text).document();
    } catch {
      data = undefined;
    }
    if (data instanceof Map) pairs = [...data].map(([k, v]) => [k, typeof v === "string" ? v : pyDumps(v)]);
  }
  const fields = pairs.slice(0, MAX_FIELDS).map(([k, v]) => ({ name: cut(wellFormed(k), MAX_NAME), value: cut(wellFormed(v), MAX_VALUE) }));
  return { fields, size: body.length };
}

export interface PausedRequest {
  method: string;
  url: string;
  kind: CommitKind;
  topLevel?: boolean;
  body?: Uint8Array | null;
  contentType?: string | null;
  pageUrl?: string | null;
  trigger?: string | null;
  element?: string | null;
  /** What the card lists instead of a body's fields (a download's file). */
  fields?: RequestField[];
}

/** The bytes a `data:` URL holds (its payload decoded), or null for another URL. */
export function dataUrlSize(url: string): number | null {
  const m = /^data:([^,]*),(.*)$/is.exec(url.trim());
  if (!m) return null;
  const payload = m[2]!;
  if (/;\s*base64\s*$/i.test(m[1]!)) {
    const b64 = payload.replace(/%[0-9a-f]{2}/gi, (e) => String.fromCharCode(parseInt(e.slice(1), 16))).replace(/[\s=]/g, "");
    return Math.floor((b64.length * 3) / 4);
  }
  let n = 0;
  for (let i = 0; i < payload.length; i++) {
    if (payload[i] === "%" && /^[0-9a-f]{2}$/i.test(payload.slice(i + 1, i + 3))) {
      n += 1;
      i += 2;
    } else {
      n += new TextEncoder().encode(payload[i]!).length;
    }
  }
  return n;
}

/** The origin a download's URL names: a `blob:` URL's own origin, else `urlOrigin`. */
export function downloadOrigin(url: string): string | null {
  return url.startsWith("blob:") ? urlOrigin(url.slice(5)) : urlOrigin(url);
}

/** What a download's card lists: the file's name (its last path part), its type and its size. */
export function downloadFields(filename: string, mime: string, bytes: number | null): RequestField[] {
  const name = filename.split(/[\\/]/).pop() || "(not named yet)";
  return [
    { name: "file", value: cut(wellFormed(name), MAX_VALUE) },
    { name: "type", value: cut(wellFormed(mime || "unknown"), MAX_VALUE) },
    { name: "size", value: bytes === null || bytes < 0 ? "unknown" : `${bytes} bytes` },
  ];
}

/** The wire's `HeldRequest` for a paused request (protocol/commits.py's `held_request`). */
export function heldRequest(p: PausedRequest): HeldRequest {
  const read = requestFields(p.body ?? null, p.contentType ?? null);
  const { fields, size } = p.fields ? { fields: p.fields, size: read.size } : read;
  const url = head(wellFormed(p.url), MAX_URL);
  return {
    method: head(p.method.toUpperCase(), 16),
    url,
    kind: p.kind,
    top_level: p.topLevel ?? false,
    origin: urlOrigin(url),
    fields,
    body_bytes: size,
    page_url: p.pageUrl ? head(wellFormed(p.pageUrl), MAX_URL) : null,
    trigger: p.trigger ?? null,
    element: p.element ? head(p.element, 64) : null,
  };
}

/** The exact text `request_digest` hashes: compact JSON of method, URL, kind, fields, body size. */
export function digestText(req: HeldRequest): string {
  return JSON.stringify([req.method.toUpperCase(), req.url, req.kind, (req.fields ?? []).map((f) => [f.name, f.value]), req.body_bytes ?? 0]);
}

/** SHA-256 (hex) of what would be sent; `commit.decided` carries it, and a request goes only when it matches. */
export async function requestDigest(req: HeldRequest): Promise<string> {
  const bytes = new TextEncoder().encode(digestText(req));
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...hash].map((b) => b.toString(16).padStart(2, "0")).join("");
}
