/**
 * The mode control of the side panel and the popup: each session this browser follows, its
 * mode by what it does (modes.ts: `ask first`, `run and flag`, `block writes`; the wire names
 * after them), and (for a paired person only) a button per mode. A looser mode asks first, in
 * the row, naming the session and what the new mode does; a tighter one switches at once. The
 * daemon takes a `session.mode` only from a paired person's tool; the page and the agent
 * cannot reach this.
 */
import { displayText } from "./display-text.js";
import { sendToWorker, type CommitMode, type SessionMode, type ToPages } from "./messages.js";
import { MODE_DOES, MODE_NAMES, MODES, loosens, loosenQuestion, modeLine } from "./modes.js";

export { MODES, modeLine };

function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Record<string, unknown> = {}, ...kids: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  Object.assign(e, props);
  e.append(...kids);
  return e;
}

export function mountModes(root: HTMLElement): void {
  const list = el("div", { className: "modes" });
  list.dataset.testid = "ws-modes";
  const status = el("p", { className: "status" });
  status.setAttribute("role", "status");
  root.append(list, status);
  /** The looser mode a row asks about (session id → mode), kept across redraws. */
  const asking = new Map<string, CommitMode>();

  const set = async (sessionId: string, mode: CommitMode) => {
    asking.delete(sessionId);
    const r = await sendToWorker({ kind: "session.mode", sessionId, mode });
    status.textContent = r.ok ? "" : displayText(r.error ?? "failed");
    await render();
  };

  const confirmBox = (s: SessionMode, next: CommitMode): HTMLElement => {
    const session = { sessionId: displayText(s.sessionId), intent: displayText(s.intent) };
    const yes = el("button", { type: "button" }, `Loosen to ${MODE_NAMES[next]}`);
    const no = el("button", { type: "button" }, s.mode ? `Keep ${MODE_NAMES[s.mode]}` : "Keep the mode");
    yes.dataset.testid = "ws-confirm-loosen";
    no.dataset.testid = "ws-keep-mode";
    yes.onclick = () => void set(s.sessionId, next);
    no.onclick = () => {
      asking.delete(s.sessionId);
      void render();
    };
    const box = el("div", { className: "confirm" }, el("p", {}, loosenQuestion(session, s.mode, next)), el("div", { className: "buttons" }, yes, no));
    box.dataset.testid = "ws-confirm-mode";
    box.dataset.mode = next;
    box.setAttribute("role", "alertdialog");
    box.onkeydown = (ev) => {
      if (ev.key === "Escape") no.click();
    };
    return box;
  };

  const row = (s: SessionMode, paired: boolean): HTMLElement => {
    const box = el("section", { className: "session-mode" });
    box.dataset.testid = "ws-session-mode";
    box.dataset.sessionId = s.sessionId;
    box.dataset.mode = s.mode ?? "";
    const line = el("div", {}, modeLine(s.mode));
    line.dataset.testid = "ws-mode-line";
    box.append(el("div", { className: "intent" }, displayText(s.intent || s.sessionId)), line);
    if (paired) {
      const group = el("div", { className: "buttons" });
      group.setAttribute("role", "group");
      group.setAttribute("aria-label", "Session mode");
      for (const m of MODES) {
        const b = el("button", { type: "button", title: `${m}: ${MODE_DOES[m]}` }, MODE_NAMES[m]);
        b.dataset.modeButton = m;
        b.setAttribute("aria-pressed", String(s.mode === m));
        b.onclick = () => {
          if (s.mode === m) return;
          if (!loosens(s.mode, m)) return void set(s.sessionId, m); // tightening never asks
          asking.set(s.sessionId, m);
          void render();
        };
        group.append(b);
      }
      box.append(group);
      const next = asking.get(s.sessionId);
      if (next && loosens(s.mode, next)) {
        const ask = confirmBox(s, next);
        box.append(ask);
        queueMicrotask(() => ask.querySelector<HTMLButtonElement>("[data-testid=ws-keep-mode]")?.focus());
      }
    }
    return box;
  };

  const render = async () => {
    const pairing = await sendToWorker({ kind: "pairing.state" });
    const sessions = await sendToWorker({ kind: "sessions.modes" });
    for (const id of asking.keys()) if (!sessions.some((s) => s.sessionId === id)) asking.delete(id);
    list.replaceChildren(...(sessions.length > 0 ? [el("h2", {}, "Sessions"), ...sessions.map((s) => row(s, pairing.paired))] : []));
  };

  chrome.runtime.onMessage.addListener((msg: ToPages) => {
    if (msg.kind === "approvals.changed") void render();
  });
  void render();
}
