/**
 * The session modes as a person reads them, mirroring protocol/modes.py (held to it by
 * protocol/vectors/modes.json): the wire keeps `ask`, `watch` and `stop` (a contract); the
 * screen names what each does (`stop` is "block writes": the agent keeps running). Loosening a
 * mode (letting through what it held) asks first; tightening never does.
 */
import type { CommitMode } from "./messages.js";

export const MODES: readonly CommitMode[] = ["ask", "watch", "stop"];

/** What each mode is called on screen. */
export const MODE_NAMES: Record<CommitMode, string> = {
  ask: "ask first",
  watch: "run and flag",
  stop: "block writes",
};

/** What each mode does to a write, one sentence each. */
export const MODE_DOES: Record<CommitMode, string> = {
  ask: "each write waits for a paired person; with nobody paired it is refused",
  watch: "writes run without waiting and are only flagged",
  stop: "every write is refused without asking; the agent keeps running",
};

/** Strictest first: a write is refused, asked about, or let through. */
const ORDER: readonly CommitMode[] = ["stop", "ask", "watch"];

/** Higher is stricter; a mode not known yet counts as the daemon's default, `ask`. */
export function strictness(mode: CommitMode | null): number {
  return ORDER.length - ORDER.indexOf(mode ?? "ask");
}

/** Whether switching `old` to `next` lets through something `old` held. */
export function loosens(old: CommitMode | null, next: CommitMode): boolean {
  return strictness(next) < strictness(old);
}

/** The on-screen name with the wire name after it (`block writes (stop)`). */
export function modeShown(mode: CommitMode | null): string {
  return mode === null ? "not known yet" : `${MODE_NAMES[mode]} (${mode})`;
}

/** The line naming a session's mode (`mode: block writes (stop) — every write is refused …`). */
export function modeLine(mode: CommitMode | null): string {
  return mode === null ? "mode: not known yet" : `mode: ${modeShown(mode)} — ${MODE_DOES[mode]}`;
}

/** The question before loosening: the session by its task and id, and what the new mode does. */
export function loosenQuestion(session: { sessionId: string; intent: string }, old: CommitMode | null, next: CommitMode): string {
  const who = session.intent ? `“${session.intent}” (${session.sessionId})` : session.sessionId;
  return `Loosen ${who} from ${old === null ? "its current mode" : modeShown(old)} to ${modeShown(next)}? In ${MODE_NAMES[next]}, ${MODE_DOES[next]}.`;
}

/** The question before allowing one origin for the rest of a session from a paused request's
 * card (the same confirmation as loosening: it names the session and what it lets through). */
export function allowOriginQuestion(session: { sessionId: string; intent: string }, origin: string): string {
  const who = session.intent ? `“${session.intent}” (${session.sessionId})` : session.sessionId;
  return `Approve this request and allow ${origin} for the rest of ${who}? Its later writes to ${origin} run without asking and are only flagged.`;
}
