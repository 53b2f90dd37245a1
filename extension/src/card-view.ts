/**
 * What the side panel and the popup show of a held step (sans-DOM): the daemon's card
 * (`approval.request.card`, daemon/sessions/cards.py) as lines of text, every string from a
 * page, an agent or a model through `displayText`, and where to cut the target out of the
 * screenshot. The TUI shows the same card (tui/widgets/approvals_table.py).
 */
import { displayText } from "./display-text.js";
import type { ApprovalRequest, CardTarget } from "./protocol.gen.js";
import { rewardText as fmt } from "./reward-text.js";

export interface CardLines {
  action: string;
  target: string | null;
  destination: string | null;
  typed: string | null;
  why: string[];
  thought: string;
  feedback: string;
  others: string[];
  /** What the page says the step will do (the guard rules' reading): informs, never holds. */
  predicts: string[];
}


/** Why the step waits for a person: the reward policy's reason, then each guard rule met. */
export function whyItWaits(req: ApprovalRequest): string[] {
  const r = fmt(req.reward);
  const threshold = typeof req.threshold === "number" ? ` ${req.threshold.toFixed(2)}` : "";
  const first: Record<string, string> = {
    below_threshold: `reward ${r} is below the threshold${threshold}`,
    reward_drop: `reward ${r} dropped from the previous step's`,
    always: "the agent asks a person at every step",
    guarded: `a guard holds it whatever the reward (${r})`,
    commit: "the browser paused a request that commits",
  };
  // a paused request's card says which rule of the mode holds it, in one sentence
  const why = req.reason === "commit" && req.card?.why ? displayText(req.card.why, { multiline: true }) : null;
  const lines = [why ?? first[req.reason] ?? displayText(String(req.reason))];
  for (const hit of req.guard ?? []) lines.push(`⚠ ${displayText(hit.rule)}: ${displayText(hit.detail)}`);
  return lines;
}

/** The card's target in words: its role, its name and its bid, escaped. */
export function targetText(t: CardTarget): string {
  const role = displayText(t.role ?? "element");
  const name = t.name ? ` “${displayText(t.name)}”` : "";
  const missing = t.role ? "" : " (not in the page's AX tree)";
  return `${role}${name} [${displayText(t.bid)}]${missing}`;
}

/** The card's lines, escaped for display (put them in `textContent`). */
export function cardLines(req: ApprovalRequest): CardLines {
  const card = req.card ?? null;
  const t = card?.target ?? null;
  const target = t ? targetText(t) : null;
  return {
    action: displayText(req.candidate.action),
    target,
    destination: card?.destination ? displayText(card.destination) : null,
    typed: card?.typed !== null && card?.typed !== undefined ? `“${displayText(card.typed)}”` : null,
    why: whyItWaits(req),
    thought: displayText(card ? (card.thought ?? "") : (req.candidate.thought ?? ""), { multiline: true }),
    feedback: displayText(card ? (card.feedback ?? "") : (req.feedback ?? ""), { multiline: true }),
    others: (card?.others ?? []).map((o) => `#${o.index}  ${fmt(o.reward)}  ${displayText(o.action)}`),
    predicts: (card?.predicts ?? []).map((hit) => `${displayText(hit.rule)}: ${displayText(hit.detail)}`),
  };
}

export const CROP_MARGIN = 16;

export interface Crop {
  /** the part of the screenshot to draw: left, top, width, height */
  sx: number;
  sy: number;
  sw: number;
  sh: number;
  /** the target within that part */
  target: [number, number, number, number];
}

/** The target's box with a margin of page around it, inside a `width` × `height` image;
 * null when it lies outside. */
export function cropOf(box: readonly number[], width: number, height: number): Crop | null {
  if (box.length !== 4 || !box.every(Number.isFinite)) return null;
  const [left, top, w, h] = box as [number, number, number, number];
  const right = left + Math.max(w, 1);
  const bottom = top + Math.max(h, 1);
  const sx = Math.max(0, Math.floor(left) - CROP_MARGIN);
  const sy = Math.max(0, Math.floor(top) - CROP_MARGIN);
  const ex = Math.min(width, Math.ceil(right) + CROP_MARGIN);
  const ey = Math.min(height, Math.ceil(bottom) + CROP_MARGIN);
  if (ex - sx < 2 || ey - sy < 2 || right <= 0 || bottom <= 0) return null;
  return { sx, sy, sw: ex - sx, sh: ey - sy, target: [left - sx, top - sy, right - left, bottom - top] };
}
