/**
 * What the side panel and the popup show of a request the browser paused (sans-DOM): the
 * card's headline first, in plain words, then exactly what would be sent (method, URL with its
 * host as punycode, the fields with escaped, shortened values, the body's size, the target
 * origin) and what caused it (the action and its element). And a decision's lines: who
 * decided, why, and the way out of a refusal. Every string goes through `displayText`.
 */
import { displayText } from "./display-text.js";
import type { ApprovalRequest, DecisionInfo, HeldRequest } from "./protocol.gen.js";

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
  const fields = (r.fields ?? []).map((f) => `${displayText(f.name)} = ${displayText(shorten(f.value, SHOWN_VALUE))}`);
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
  };
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
  const mode = d.mode ? `; mode ${d.mode}` : "";
  const lines = [`${what}${who ? ` by ${who}${by}` : ""}${mode}`];
  if (d.note) lines.push(`why: ${displayText(d.note)}`);
  if (!ran && d.way_out) lines.push(`way out: ${displayText(d.way_out)}`);
  return lines;
}
