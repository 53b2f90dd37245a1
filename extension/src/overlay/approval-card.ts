/**
 * The overlay's approval card: the held action, its reward and feedback, and where to
 * decide. It has no decision controls: the overlay lives in the page, where the page's own
 * script and an agent driving the page could press them. A person decides in the
 * extension's side panel or popup (extension pages) or in the TUI. Every untrusted string goes
 * through `displayText` into a text node.
 */
import type { ApprovalRequest } from "../protocol.gen.js";
import { rewardColour } from "./reward-colour.js";
import { displayText } from "../display-text.js";
import { rewardText } from "../reward-text.js";
import { stepLabel } from "../steps.js";
import { requestLines, summaryLines } from "../request-card.js";

export const WHERE_TO_DECIDE = "Decide in webshepherd's side panel or its toolbar popup, or in the TUI.";

function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Record<string, unknown> = {}, ...kids: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  Object.assign(e, props);
  e.append(...kids);
  return e;
}

/** A paused request's card in the task's words, as the side panel's (request-card.ts). */
function said(req: ApprovalRequest): HTMLElement[] {
  const r = requestLines(req);
  if (!r) return [];
  const box = el("div", { className: "said" }, ...summaryLines(r).map((line) => el("div", {}, line)));
  box.dataset.testid = "ws-approval-said";
  return [box];
}

export function approvalCard(req: ApprovalRequest): HTMLElement {
  const card = el("section", { className: "approval" });
  card.dataset.testid = "ws-approval";
  card.dataset.requestId = req.request_id;
  card.dataset.reason = req.reason;
  card.setAttribute("aria-label", "Approval needed");
  const reward = rewardText(req.reward);
  const rewardEl = el("strong", {}, reward);
  rewardEl.style.color = rewardColour(req.reward);
  const headline = req.card?.headline;
  if (req.reason === "commit") {
    // a request the browser paused: what it would send, in plain words, no reward
    card.append(
      el("h3", {}, displayText(headline ?? "Waiting for a person: a request that commits")),
      el("code", {}, displayText(`${req.card?.request?.method ?? ""} ${req.card?.request?.url ?? ""}`.trim())),
      ...said(req),
      el("p", { className: "where" }, WHERE_TO_DECIDE),
    );
    return card;
  }
  card.append(
    el("h3", {}, `Waiting for a person: ${stepLabel(req.step)} (${displayText(req.reason.replace(/_/g, " "))})`),
    ...(headline ? [el("p", { className: "headline" }, displayText(headline))] : []),
    el("code", {}, displayText(req.candidate.action)),
    el("div", {}, "reward ", rewardEl),
    el("div", { className: "feedback" }, displayText(req.feedback ?? "", { multiline: true })),
    el("p", { className: "where" }, WHERE_TO_DECIDE),
  );
  return card;
}
