/**
 * The options page: daemon URL, token, observation flags, the page hook (off by default), and
 * "Pair with this computer": the one-time code of `webshepherd pair extension`, sent by the
 * worker in `pair`; the credential it gets is kept in chrome.storage.local.
 */
import { displayText } from "./display-text.js";
import { HOW_TO_PAIR, sendToWorker } from "./messages.js";
import { loadSettings, parsePairing, saveSettings } from "./settings.js";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

async function main() {
  const s = await loadSettings();
  $<HTMLInputElement>("url").value = s.url;
  $<HTMLInputElement>("token").value = s.token;
  $<HTMLSelectElement>("flags").value = s.flags;
  $<HTMLInputElement>("pageHook").checked = s.pageHook;
  $<HTMLFormElement>("form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const pairing = parsePairing($<HTMLInputElement>("token").value);
    const url = pairing.url ?? $<HTMLInputElement>("url").value.trim();
    await saveSettings({
      url,
      token: pairing.token ?? "",
      flags: $<HTMLSelectElement>("flags").value as "default" | "visible",
      pageHook: $<HTMLInputElement>("pageHook").checked,
    });
    $<HTMLInputElement>("url").value = url;
    $<HTMLInputElement>("token").value = pairing.token ?? "";
    $("status").textContent = "Saved; the extension reconnects now (the badge shows the state).";
  });
  const showPairing = async () => {
    const st = await sendToWorker({ kind: "pairing.state" });
    $("pairing").textContent = st.paired
      ? `Paired as extension:${displayText(st.name ?? "?")}: this browser's side panel and popup decide approvals.`
      : `${st.note ? `${displayText(st.note)} ` : ""}${HOW_TO_PAIR}`;
  };
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
  await showPairing();
}

void main();
