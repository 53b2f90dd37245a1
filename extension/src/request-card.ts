/**
 * What the side panel and the popup show of a request the browser paused (sans-DOM): the
 * card's headline first, in plain words, then exactly what would be sent (method, URL with its
 * host as punycode, the fields with escaped, shortened values, the body's size, the target
 * origin) and what caused it (the action and its element). Read first, in the task's words
 * (the daemon's card, daemon/sessions/cards.py): what was clicked, what it sends as the page
 * labels it, the page's amounts near it, why it waits, the judge's view, the time left and
 * what Approve and Reject each do. And a decision's lines: who decided, why, and the way out
 * of a refusal, the mode named by what it does (modes.ts). Every string goes through `displayText`.
 */
import { targetText } from "./card-view.js";
import { urlOrigin } from "./commit-hold.js";
import { displayText } from "./display-text.js";
import { modeShown } from "./modes.js";
import type { ApprovalRequest, DecisionInfo, HeldRequest } from "./protocol.gen.js";
import { rewardText } from "./reward-text.js";
import { stepNumber } from "./steps.js";

/** The most of a field's value a card shows (the wire carries up to 512). */
export const SHOWN_VALUE = 120;

export interface RequestLines {
  headline: string;
  method: string;
  url: string;
  origin: string;
  fields: string[];
  body: string;
  trigger: string;
  page: string | null;
  /** The element the action that caused it acted on (role “name” [bid]), when known. */
  clicked: string | null;
  /** The page's own amounts near it (a price, a total). */
  amounts: string[];
  /** Which rule of the mode holds it, one sentence. */
  why: string | null;
  /** The judge's reward of that action and the checklist item it serves. */
  judge: string | null;
  /** When it is refused unanswered (Unix seconds, the daemon's clock). */
  expiresAt: number | null;
  approve: string | null;
  reject: string | null;
}

/** The time left to decide at `now` (Unix seconds), `m:ss`, and what happens then. */
export function timeLeft(expiresAt: number, now: number): string {
  if (expiresAt - now <= 0) return "none: it is refused unless answered now";
  const left = Math.floor(expiresAt - now);
  return `${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")} (then it is refused)`;
}

const KIND_WORDS: Record<HeldRequest["kind"], string> = {
  write: "sends data to keep",
  navigation: "opens another site",
  download: "downloads a file",
};

function shorten(text: string, limit: number): string {
  const cps = Array.from(text);
  return cps.length <= limit ? text : `${cps.slice(0, limit - 1).join("")}…`;
}

/** The plain sentence for a request when the daemon sent no headline. */
export function fallbackHeadline(r: HeldRequest): string {
  return `Waiting for you: this ${KIND_WORDS[r.kind]} (${r.method} ${r.url})`;
}

/** The lines of a paused request's card, escaped (put them in `textContent`); null when the
 * approval is not a paused request. */
export function requestLines(req: ApprovalRequest): RequestLines | null {
  const r = req.card?.request;
  if (req.reason !== "commit" || !r) return null;
  const size = r.body_bytes ?? 0;
  const card = req.card!;
  const labels = new Map((card.labels ?? []).map((l) => [l.name, l.label]));
  const fields = (r.fields ?? []).map((f) => {
    const label = labels.get(f.name);
    const name = label ? `${displayText(label)} (${displayText(f.name)})` : displayText(f.name);
    return `${name} = ${displayText(shorten(f.value, SHOWN_VALUE))}`;
  });
  const j = card.judge ?? null;
  let judge: string | null = null;
  if (j) {
    judge = `reward ${rewardText(j.reward)} at step ${stepNumber(j.step)}`;
    if (typeof j.item === "number") judge += ` · serves checklist item ${j.item}${j.item_title ? `: ${displayText(j.item_title)}` : ""}`;
  }
  let trigger = "the page itself (no agent action is known to have caused it)";
  if (r.trigger) trigger = r.element ? `${displayText(r.trigger)} on element [${displayText(r.element)}]` : displayText(r.trigger);
  return {
    headline: displayText(req.card?.headline ?? fallbackHeadline(r)),
    method: displayText(r.method),
    url: displayText(r.url),
    origin: displayText(r.origin ?? "(none)"),
    fields,
    body: size === 0 ? "no body" : `${size} byte${size === 1 ? "" : "s"}${fields.length === 0 ? " (no fields read)" : ""}`,
    trigger,
    page: r.page_url ? displayText(r.page_url) : null,
    clicked: card.target ? targetText(card.target) : null,
    amounts: (card.amounts ?? []).map((a) => displayText(a)),
    why: card.why ? displayText(card.why, { multiline: true }) : null,
    judge,
    expiresAt: typeof card.expires_at === "number" ? card.expires_at : null,
    approve: card.on_approve ? displayText(card.on_approve) : null,
    reject: card.on_reject ? displayText(card.on_reject) : null,
  };
}

/** `HH:MM:SS` of a Unix time, in local time. */
export function clockTime(unix: number): string {
  const d = new Date(unix * 1000);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
}

/** The card in the task's words as short lines, for the overlay (escaped, `textContent`):
 * what was clicked, what it sends, the page's amounts, why it waits, the judge, the deadline
 * and what each answer does; only the lines the card has. */
export function summaryLines(r: RequestLines, shownFields = 3): string[] {
  const lines: string[] = [];
  if (r.clicked) lines.push(`Clicked: ${r.clicked}`);
  if (r.fields.length > 0) {
    const more = r.fields.length > shownFields ? ` · … ${r.fields.length - shownFields} more` : "";
    lines.push(`Sends: ${r.fields.slice(0, shownFields).join(" · ")}${more}`);
  }
  if (r.amounts.length > 0) lines.push(`The page says: ${r.amounts.join(" · ")}`);
  if (r.why) lines.push(`Why: ${r.why}`);
  if (r.judge) lines.push(`Judge: ${r.judge}`);
  if (r.expiresAt !== null) lines.push(`Decide by ${clockTime(r.expiresAt)}, or it is refused`);
  if (r.approve) lines.push(`Approve: ${r.approve}`);
  if (r.reject) lines.push(`Reject: ${r.reject}`);
  return lines;
}

const DECIDERS: Record<string, string> = {
  person: "a person",
  guard: "the daemon's guard rules",
  mode: "the session's mode",
  timeout: "a timeout (nobody answered)",
  sandbox: "a sandbox origin",
  daemon: "the daemon (nobody could decide)",
};

/** A decision in words: what happened and who decided (`by` names a person only when a
 * person decided), then why and, for a refusal, the way out. Escaped. */
export function decisionLines(d: DecisionInfo, flagged = false): string[] {
  const ran = d.status === "approved" || d.status === "auto" || d.status === "edited";
  const what = flagged ? "ran, flagged" : ran ? "allowed" : d.status === "timeout" ? "refused (timed out)" : "refused";
  const who = d.decider ? (DECIDERS[d.decider] ?? displayText(d.decider)) : null;
  const by = d.decider === "person" && d.by ? ` (${displayText(d.by)})` : "";
  const mode = d.mode ? `; mode: ${modeShown(d.mode)}` : "";
  const lines = [`${what}${who ? ` by ${who}${by}` : ""}${mode}`];
  if (d.note) lines.push(`why: ${displayText(d.note)}`);
  if (!ran && d.way_out) lines.push(`way out: ${displayText(d.way_out)}`);
  return lines;
}

/** The origin a person may allow for the rest of the session from a paused request's card
 * (`approval.decide`'s `allow_origin`): its target's, as the daemon reads it; null for a held
 * step, or a URL with no such origin (`file:`, `data:`). */
export function originToAllow(req: ApprovalRequest): string | null {
  const url = req.card?.request?.url;
  const origin = url ? urlOrigin(url) : null;
  return origin === "file://" ? null : origin;
}
