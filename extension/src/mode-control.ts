/**
 * The side panel's mode control: each session this browser follows, its mode, and (for a
 * paired person only) buttons to switch it: `ask` (a paired person decides each request that
 * commits), `watch` (they run, flagged), `stop` (refused without asking). The daemon takes a
 * `session.mode` only from a paired person's tool; the page and the agent cannot reach this.
 */
import { displayText } from "./display-text.js";
import { sendToWorker, type CommitMode, type SessionMode, type ToPages } from "./messages.js";

export const MODES: readonly CommitMode[] = ["ask", "watch", "stop"];

/** What each mode does, in the words the control shows. */
export const MODE_WORDS: Record<CommitMode, string> = {
  ask: "ask me before anything commits",
  watch: "let it run, flag what commits",
  stop: "refuse whatever commits, without asking",
};

/** The line naming a session's mode (`mode: ask — ask me before anything commits`). */
export function modeLine(mode: CommitMode | null): string {
  return mode === null ? "mode: not known yet" : `mode: ${mode} — ${MODE_WORDS[mode]}`;
}

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

  const set = async (sessionId: string, mode: CommitMode) => {
    const r = await sendToWorker({ kind: "session.mode", sessionId, mode });
    status.textContent = r.ok ? "" : displayText(r.error ?? "failed");
    await render();
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
        const b = el("button", { type: "button", title: MODE_WORDS[m] }, m);
        b.setAttribute("aria-pressed", String(s.mode === m));
        b.onclick = () => void set(s.sessionId, m);
        group.append(b);
      }
      box.append(group);
    }
    return box;
  };

  const render = async () => {
    const pairing = await sendToWorker({ kind: "pairing.state" });
    const sessions = await sendToWorker({ kind: "sessions.modes" });
    list.replaceChildren(...(sessions.length > 0 ? [el("h2", {}, "Sessions"), ...sessions.map((s) => row(s, pairing.paired))] : []));
  };

  chrome.runtime.onMessage.addListener((msg: ToPages) => {
    if (msg.kind === "approvals.changed") void render();
  });
  void render();
}
