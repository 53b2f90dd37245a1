/** The action icon's badge: connected, disconnected, or waiting for an approval. */
import type { ConnState } from "./connection.js";

export type BadgeState = ConnState | "approval";

export const BADGE: Record<BadgeState, { text: string; color: string; title: string }> = {
  connected: { text: "on", color: "#1a7f37", title: "webshepherd: connected to the daemon" },
  connecting: { text: "…", color: "#6e7781", title: "webshepherd: connecting" },
  disconnected: { text: "off", color: "#6e7781", title: "webshepherd: daemon not reachable" },
  unauthorized: { text: "key", color: "#cf222e", title: "webshepherd: no token, or the daemon refused it (options: Connect to the daemon)" },
  approval: { text: "!", color: "#bf8700", title: "webshepherd: waiting for your approval" },
};

export async function showBadge(state: BadgeState, detail?: string): Promise<void> {
  const b = BADGE[state];
  await chrome.action.setBadgeText({ text: b.text });
  await chrome.action.setBadgeBackgroundColor({ color: b.color });
  await chrome.action.setTitle({ title: detail ? `${b.title} (${detail})` : b.title });
}
