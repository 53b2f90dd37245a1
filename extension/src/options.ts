/** The options page: daemon URL, pairing token, observation flags, the page hook (off by default). */
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
}

void main();
