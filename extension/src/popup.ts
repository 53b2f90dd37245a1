/**
 * The action popup: the connection to the daemon and the person's pairing (status-words.ts),
 * the followed sessions' modes (mode-control.ts: loosening asks first), the approvals waiting
 * for a person (approvals-ui.ts; the side panel lists the same), and demonstrations: start a session with an
 * instruction in this tab (the person's own actions are recorded), stop it with an outcome.
 * Opened as a page, `popup.html?tab=ID` names the tab (tests drive it that way).
 */
import { mountApprovals } from "./approvals-ui.js";
import { displayText } from "./display-text.js";
import { inlineCode } from "./inline-code.js";
import { sendToWorker, type ToPages } from "./messages.js";
import { mountModes } from "./mode-control.js";
import { connectionWords, personWords } from "./status-words.js";
import { textWithUrl } from "./url-wrap.js";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

async function targetTab(): Promise<number | undefined> {
  const param = new URLSearchParams(location.search).get("tab");
  if (param) return Number(param);
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  return tab?.id;
}

/** The connection to the daemon (its URL wrapped at sensible points) and the person's pairing. */
async function renderStatus() {
  const p = await sendToWorker({ kind: "pairing.state" });
  const conn = displayText(connectionWords(p.link));
  // a command in backticks shows as code; the daemon's URL wraps at sensible points
  $("state").replaceChildren(...inlineCode(conn, (t) => textWithUrl(t, displayText(p.link.url))));
  $("state").dataset.conn = p.link.token ? p.link.conn : "no-token";
  $("person").replaceChildren(...inlineCode(displayText(personWords(p))));
}

async function render(tabId: number | undefined) {
  await renderStatus();
  if (tabId === undefined) return;
  const st = await sendToWorker({ kind: "demonstration.state", tabId });
  const demonstration = st.session?.demonstration ? st.session : null;
  $("start-form").hidden = demonstration !== null || st.session !== null || !st.connected;
  $("stop-form").hidden = demonstration === null;
  $("recording").textContent = demonstration ? `Recording: ${displayText(demonstration.intent)}` : st.session ? "This tab follows an agent's session." : "";
}

async function main() {
  mountModes($("modes"));
  mountApprovals($("approvals"), "popup");
  const tabId = await targetTab();
  $("open-panel").addEventListener("click", () => {
    void chrome.windows.getCurrent().then((w) => (w.id === undefined ? undefined : chrome.sidePanel.open({ windowId: w.id })));
  });
  $<HTMLFormElement>("start-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (tabId === undefined) return;
    const r = await sendToWorker({ kind: "demonstration.start", tabId, intent: $<HTMLInputElement>("intent").value });
    $("error").textContent = r.ok ? "" : displayText(r.error ?? "failed");
    await render(tabId);
  });
  $<HTMLFormElement>("stop-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (tabId === undefined) return;
    const outcome = $<HTMLSelectElement>("outcome").value as "success" | "failure" | "unknown";
    const r = await sendToWorker({ kind: "demonstration.stop", tabId, outcome });
    $("error").textContent = r.ok ? "Saved." : displayText(r.error ?? "failed");
    await render(tabId);
  });
  chrome.runtime.onMessage.addListener((msg: ToPages) => {
    if (msg?.kind === "approvals.changed") void renderStatus(); // the worker says so on every state change
  });
  await render(tabId);
}

void main();
