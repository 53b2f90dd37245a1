/**
 * The content script (top frame): relays the page hook to the worker and
 * draws the overlay for the tab's session.
 */
import { sendToWorker, type ToContent } from "./messages.js";
import { DemonstrationRecorder } from "./demonstration-recorder.js";
import { Overlay } from "./overlay/overlay.js";
import { CHANNEL, hookError, parseHookRequest } from "./page-hook.js";

const overlay = new Overlay((requestId, decision, action) => {
  void sendToWorker({ kind: "approval.decide", requestId, decision, action });
});

const recorder = new DemonstrationRecorder((action) => void sendToWorker({ kind: "demonstration.action", action }).catch(() => undefined));

window.addEventListener("message", (ev) => {
  if (ev.source !== window) return;
  const req = parseHookRequest(ev.data);
  if (!req) return;
  sendToWorker({ kind: "hook", request: req })
    .then((reply) => window.postMessage(reply ?? hookError(req.id, "failed", "no reply"), "*"))
    .catch((err) => window.postMessage(hookError(req.id, "failed", String(err)), "*"));
});

chrome.runtime.onMessage.addListener((msg: ToContent) => {
  if (msg.kind === "view") overlay.update(msg.view);
  else if (msg.kind === "progress") overlay.showProgress(msg.candidate, msg.text);
  else if (msg.kind === "demonstration") recorder.setActive(msg.on);
  // approval.resolved: the view that follows no longer lists it
});

function start() {
  void sendToWorker({ kind: "tab.state" }).then((state) => {
    if (state?.view) overlay.update(state.view);
    if (state?.session?.demonstration) recorder.setActive(true);
  });
  // Tell the page the hook is there (agents may wait for this instead of polling `status`).
  window.postMessage({ channel: CHANNEL, dir: "reply", id: "", type: "ready" }, "*");
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start, { once: true });
else start();
