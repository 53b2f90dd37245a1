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

/** `ws://host:port/v1#TOKEN` (what `webshepherd pair` style strings look like) or a bare token. */
export function parsePairing(text: string): Partial<Settings> {
  const t = text.trim();
  const m = /^(wss?:\/\/[^#\s]+)#(\S+)$/.exec(t);
  if (m) return { url: m[1]!, token: m[2]! };
  return { token: t };
}
