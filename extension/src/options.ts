/**
 * The options page. "Connect to the daemon": its URL and token (either field takes
 * `ws://host:port/v1#TOKEN`, split as it is typed or pasted so no token stays in the URL field;
 * what cannot be read is refused in words, settings.ts), then the connection's state, live.
 * Observation flags and the page hook (off by default). "Pair as a person": the one-time code
 * of `webshepherd pair extension`, sent by the worker in `pair`; the credential it gets is kept
 * in chrome.storage.local.
 */
import { displayText } from "./display-text.js";
import { HOW_TO_PAIR, sendToWorker, type ToPages } from "./messages.js";
import { loadSettings, readConnectFields, saveSettings, splitField } from "./settings.js";
import { connectionWords } from "./status-words.js";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

/** A field holding `URL#TOKEN` is split at once: the URL to the URL field, the token to the
 *  token field, which takes the focus (so a token being typed goes on there). */
function splitOnInput(field: HTMLInputElement) {
  const parts = splitField(field.value);
  if (parts.url === undefined || parts.token === undefined || parts.token === "") return;
  const token = $<HTMLInputElement>("token");
  $<HTMLInputElement>("url").value = parts.url;
  token.value = parts.token;
  if (field !== token) {
    token.focus();
    token.setSelectionRange(token.value.length, token.value.length);
  }
}

const NOT_A_CODE =
  "Not a pairing code: that is the daemon's URL (and token), which goes under “Connect to the daemon” above. The pairing code is the one `webshepherd pair extension` shows (1234-5678).";

async function showConnection() {
  const st = await sendToWorker({ kind: "pairing.state" });
  const out = $("connection");
  out.textContent = displayText(connectionWords(st.link));
  out.dataset.conn = st.link.token ? st.link.conn : "no-token";
}

async function main() {
  const s = await loadSettings();
  $<HTMLInputElement>("url").value = s.url;
  $<HTMLInputElement>("token").value = s.token;
  $<HTMLSelectElement>("flags").value = s.flags;
  $<HTMLInputElement>("pageHook").checked = s.pageHook;
  for (const id of ["url", "token"]) $<HTMLInputElement>(id).addEventListener("input", (ev) => splitOnInput(ev.target as HTMLInputElement));
  $<HTMLFormElement>("form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const read = readConnectFields($<HTMLInputElement>("url").value, $<HTMLInputElement>("token").value);
    if (!read.ok) {
      $("status").textContent = `Not saved: ${displayText(read.error)}.`;
      return;
    }
    await saveSettings({
      url: read.url,
      token: read.token,
      flags: $<HTMLSelectElement>("flags").value as "default" | "visible",
      pageHook: $<HTMLInputElement>("pageHook").checked,
    });
    $<HTMLInputElement>("url").value = read.url;
    $<HTMLInputElement>("token").value = read.token;
    $("status").textContent = "Saved; the extension connects with these now (below: how it went).";
    await showConnection();
  });
  const showPairing = async () => {
    const st = await sendToWorker({ kind: "pairing.state" });
    $("pairing").textContent = st.paired
      ? `Paired as extension:${displayText(st.name ?? "?")}: this browser's side panel and popup decide approvals.`
      : `${st.note ? `${displayText(st.note)} ` : ""}${HOW_TO_PAIR}`;
  };
  $<HTMLInputElement>("pairCode").addEventListener("input", (ev) => {
    const field = ev.target as HTMLInputElement;
    if (splitField(field.value).url === undefined) return;
    field.value = ""; // a URL (with a token) is no pairing code: not kept in sight, not sent
    $("pairing").textContent = NOT_A_CODE;
  });
  $<HTMLFormElement>("pair-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const code = $<HTMLInputElement>("pairCode").value.trim();
    const r = await sendToWorker({ kind: "pair", code });
    $<HTMLInputElement>("pairCode").value = "";
    if (!r.ok) {
      $("pairing").textContent = `Not paired: ${displayText(r.error ?? "failed")}`;
      return;
    }
    await showPairing();
  });
  chrome.runtime.onMessage.addListener((msg: ToPages) => {
    if (msg?.kind === "approvals.changed") void showConnection(); // the worker says so on every state change
  });
  await showConnection();
  await showPairing();
}

void main();
