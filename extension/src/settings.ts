/**
 * What the options page sets: the daemon's URL and token, which observation flags to send,
 * and whether pages may use the page hook (off unless the agent's launcher, or the person,
 * turns it on; see page-hook.ts). `approver` is the credential a person's pairing got
 * (`webshepherd pair extension`, then the code in the options page): kept here, in
 * chrome.storage.local, which no web page reaches; without it this browser decides nothing.
 */
import type { ObservationFlags } from "./capture/observation-text.js";

export interface Settings {
  url: string;
  token: string;
  flags: ObservationFlags;
  pageHook: boolean;
  approver: string;
  approverName: string;
}

export const DEFAULT_SETTINGS: Settings = {
  url: "ws://127.0.0.1:8765/v1",
  token: "",
  flags: "default",
  pageHook: false,
  approver: "",
  approverName: "",
};

export async function loadSettings(): Promise<Settings> {
  const stored = await chrome.storage.local.get(["url", "token", "flags", "pageHook", "approver", "approverName"]);
  return { ...DEFAULT_SETTINGS, ...stored } as Settings;
}

export async function saveSettings(s: Partial<Settings>): Promise<void> {
  await chrome.storage.local.set(s);
}

const WITH_TOKEN = /^([a-z][a-z0-9+.-]*:\/\/[^#\s]*)#(.*)$/i;

/** What the options page's two fields say once read: the URL (without a token) and the token,
 *  or why they are refused (in words that never repeat the token). */
export type ConnectFields = { ok: true; url: string; token: string } | { ok: false; error: string };

/** One field's text: a bare URL or token, or `ws://host:port/v1#TOKEN` (both at once). The
 *  options page splits a field as it is typed or pasted, so no token stays in the URL field. */
export function splitField(text: string): { url?: string; token?: string } {
  const t = text.trim();
  const m = WITH_TOKEN.exec(t);
  if (m) return { url: m[1]!, token: m[2]! };
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(t) ? { url: t } : t ? { token: t } : {};
}

/** Why `url` is no daemon URL (null: it is one): ws:// or wss://, a host, no token or spaces. */
function urlProblem(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "the daemon URL is not a URL: it looks like ws://127.0.0.1:8765/v1";
  }
  if (u.protocol !== "ws:" && u.protocol !== "wss:") return `the daemon URL starts with ws:// or wss:// (not ${u.protocol}//), e.g. ws://127.0.0.1:8765/v1`;
  if (!u.hostname) return "the daemon URL names no host, e.g. ws://127.0.0.1:8765/v1";
  if (u.username || u.password) return "the daemon URL carries no user or password: the token goes after # or in the Token field";
  return null;
}

/**
 * Reads the options page's "Daemon URL" and "Token" fields. Either field takes a bare value or
 * `ws://host:port/v1#TOKEN`: the part after `#` is the token, the rest the URL (saved without
 * it). A URL pasted into the Token field replaces the URL field's; two different tokens, or two
 * different URLs each pasted with a token, are refused rather than one picked silently.
 */
export function readConnectFields(urlField: string, tokenField: string): ConnectFields {
  const a = splitField(urlField);
  const b = splitField(tokenField);
  if (a.token !== undefined && a.url === undefined) {
    return { ok: false, error: "the Daemon URL field holds no URL: put the token in the Token field, or paste ws://host:port/v1#TOKEN" };
  }
  if (a.token !== undefined && b.token !== undefined && a.token !== b.token) {
    return { ok: false, error: "two different tokens, one in each field: keep the one `webshepherd token` prints" };
  }
  if (a.token !== undefined && b.url !== undefined && a.url !== b.url) {
    return { ok: false, error: "two different daemon URLs, one in each field: keep one" };
  }
  const url = b.url ?? a.url ?? "";
  const token = b.token ?? a.token ?? "";
  if (!url) return { ok: false, error: "the daemon URL is empty, e.g. ws://127.0.0.1:8765/v1" };
  const problem = urlProblem(url);
  if (problem) return { ok: false, error: problem };
  if (b.url !== undefined && b.token === undefined) {
    return { ok: false, error: "the Token field holds a URL without a token: paste `webshepherd token`'s output, or ws://host:port/v1#TOKEN" };
  }
  if ((a.url !== undefined && a.token === "") || (b.url !== undefined && b.token === "")) {
    return { ok: false, error: "nothing after # in the pasted URL: the token goes there (ws://host:port/v1#TOKEN)" };
  }
  if (/\s/.test(token)) return { ok: false, error: "the token has spaces in it: paste only the token `webshepherd token` prints" };
  return { ok: true, url, token };
}
