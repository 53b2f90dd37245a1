/**
 * The overlay's notice of a refused request (issue 51): a small box at the top of its panel,
 * outside the part each view redraws, saying what was not sent, who refused it and why. The
 * latest refusal replaces the one before; its text goes through displayText.
 */
import { displayText } from "../display-text.js";
import type { Overlay } from "./overlay.js";

const STYLE = "margin: 4px 8px; padding: 4px 6px; border: 1px solid #cf222e; border-radius: 4px; background: #ffebe9; color: #82071e; font: 12px system-ui, sans-serif; white-space: pre-wrap; overflow-wrap: anywhere;";

/** Shows `text` (the worker's refusalNotice) on `overlay`'s panel. */
export function showRefusal(overlay: Overlay, text: string): void {
  overlay.mount();
  const panel = overlay.host.shadowRoot?.querySelector<HTMLElement>("[data-testid=ws-panel]");
  if (!panel) return;
  let box = panel.querySelector<HTMLElement>("[data-testid=ws-refused]");
  if (!box) {
    box = document.createElement("div");
    box.dataset.testid = "ws-refused";
    box.setAttribute("role", "alert");
    box.setAttribute("style", STYLE);
    panel.insertBefore(box, panel.children[1] ?? null); // under the head, above the body
  }
  box.textContent = displayText(text, { multiline: true });
}
