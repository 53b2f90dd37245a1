/**
 * The content script (top frame): relays the page hook to the worker (only while the hook
 * is on; the page gets no reply otherwise) and draws the overlay for the tab's session.
 * The overlay shows approval requests but takes no decision: a page's script, or an agent
 * driving the page, could reach anything drawn in it.
 */
import { sendToWorker, type ToContent } from "./messages.js";
import { DemonstrationRecorder } from "./demonstration-recorder.js";
import { Overlay } from "./overlay/overlay.js";
import { CHANNEL, hookError, parseHookRequest } from "./page-hook.js";
import { showRefusal } from "./overlay/refusal-notice.js";

const overlay = new Overlay();

const recorder = new DemonstrationRecorder((action) => void sendToWorker({ kind: "demonstration.action", action }).catch(() => undefined));

window.addEventListener("message", (ev) => {
  if (ev.source !== window) return;
  const req = parseHookRequest(ev.data);
  if (!req) return;
  sendToWorker({ kind: "hook", request: req })
    .then((reply) => {
      if (reply) window.postMessage(reply, "*"); // null: the hook is off, say nothing
    })
    .catch((err) => window.postMessage(hookError(req.id, "failed", String(err)), "*"));
});

/** A hook session's view is drawn only on the origin that started or attached it. */
const here = (origin: string | undefined) => origin === undefined || origin === location.origin;

chrome.runtime.onMessage.addListener((msg: ToContent, _sender, sendResponse) => {
  if (msg.kind === "overlay.hidden") {
    overlay.setHidden(msg.hidden);
    // answered once the change is painted: the screenshot that follows does not show it
    requestAnimationFrame(() => requestAnimationFrame(() => sendResponse(true)));
    return true;
  }
  if (msg.kind === "view") overlay.update(here(msg.origin) ? msg.view : null);
  else if (msg.kind === "progress" && here(msg.origin)) overlay.showProgress(msg.candidate, msg.text);
  else if (msg.kind === "demonstration") recorder.setActive(msg.on);
  else if (msg.kind === "refused") showRefusal(overlay, msg.text);
  // approval.resolved: the view that follows no longer lists it
});

function start() {
  void sendToWorker({ kind: "tab.state" }).then((state) => {
    if (state?.view) overlay.update(state.view);
    if (state?.session?.demonstration) recorder.setActive(true);
    // Tell the page the hook is there (agents may wait for this instead of polling `status`).
    if (state?.hook) window.postMessage({ channel: CHANNEL, dir: "reply", id: "", type: "ready" }, "*");
  });
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start, { once: true });
else start();
