/** The overlay's state per session, updated from daemon messages (pure; the worker owns one). */
import { targetBid } from "./action-strings.js";
import type { CommitMode, PendingApproval, RecentCommit, SessionMode, SessionView, TreeBranch } from "./messages.js";
import type { ApprovalRequest, Candidate, ChecklistItem, CommitDecided, ItemProbs, Scored, Signal, TreeNodeEvent } from "./protocol.gen.js";

/** How many flagged commits a view keeps, and how many decided requests the panel lists. */
const MAX_FLAGS = 5;
const MAX_RECENT = 20;

/** `role 'name'` of the element with `bid` in an AX tree's text (BrowserGym's lines:
 * `[bid] role 'name' ...`), or null when the tree has no such element. Raw: show it through
 * displayText. */
export function axTarget(axtree: string, bid: string): string | null {
  const esc = bid.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const m = new RegExp(`^[\\t ]*\\[${esc}\\] (\\S+)(?: (['"])((?:\\\\.|(?!\\2).)*)\\2)?`, "m").exec(axtree);
  if (!m) return null;
  return m[3] ? `${m[1]} “${m[3]}”` : m[1]!;
}

/** Whether two URLs show the same document (a fragment apart). */
export function sameDocument(a: string, b: string): boolean {
  return a.split("#")[0] === b.split("#")[0];
}

/** What of a view belongs on the page at `href`: the scores (and their outlines) only when
 * they were scored on this page's observation; held steps' outlines only for the current one. */
export function drawable(v: SessionView, href: string): { last: SessionView["last"]; outlined: SessionView["approvals"] } {
  const here = v.url === null || sameDocument(v.url, href);
  // a step held for a person at (or past) the scoring's step was scored again: the earlier
  // scoring's values are not that step's, so none of them is drawn beside its card
  const heldAgain = (s: number) => v.approvals.some((a) => a.reason !== "commit" && a.step >= s);
  const last = here && v.last && (v.step === null || v.last.scored.step === v.step) && !heldAgain(v.last.scored.step) ? v.last : null;
  const outlined = here ? v.approvals.filter((a) => a.reason !== "commit" && (v.step === null || a.step === v.step)) : [];
  return { last, outlined };
}

/** One checklist row as the overlay draws it: `number` as `webshepherd report` numbers it (its
 * place in the list, from 1; `index` is the judge's own number, which may skip), the best
 * candidate's label probabilities, and whether they are only `predicted`: the action they
 * judge has not happened (a person is still asked about it, or it was refused). */
export interface ChecklistRow {
  number: number;
  index: number;
  title: string;
  probs: ItemProbs | null;
  predicted: boolean;
}

/** The checklist rows of a view, with `last` its drawable scoring (see `drawable`). */
export function checklistRows(v: SessionView, last: SessionView["last"]): ChecklistRow[] {
  const best = last?.scored.results.find((r) => r.index === last.scored.best);
  const status = last?.scored.decision.status;
  const predicted = v.approvals.length > 0 || (status !== undefined && status !== "auto" && status !== "approved");
  return v.checklist.map((item, i) => ({
    number: i + 1,
    index: item.index,
    title: item.title,
    probs: best?.items?.find((p) => p.index === item.index) ?? null,
    predicted,
  }));
}

/** The bars' segments and what each means (the overlay's legend names the same). */
export const BAR_SEGMENTS = [
  { cls: "yes", key: "yes", legend: "done" },
  { cls: "prog", key: "in_progress", legend: "in progress" },
  { cls: "no", key: "no", legend: "not done" },
] as const;

/** A bar's words (its aria-label and title): what the judge gives each label, or why none. */
export function barLabel(row: ChecklistRow): string {
  if (!row.probs) return "not scored yet";
  const p = row.probs;
  const words = BAR_SEGMENTS.map((s) => `${s.legend} ${Math.round(p[s.key] * 100)}%`).join(", ");
  return row.predicted ? `predicted, not happened yet: ${words}` : words;
}

/** What the reward part shows: nothing before a score, the one value after one step (a
 * curve needs two points), the curve from two. */
export function rewardChart(rewards: (number | null)[]): { kind: "none" } | { kind: "value"; value: number | null } | { kind: "curve" } {
  const known = rewards.filter((r) => r !== null).length;
  if (rewards.length === 0) return { kind: "none" };
  return known >= 2 ? { kind: "curve" } : { kind: "value", value: rewards.find((r) => r !== null) ?? null };
}

/** How a decided request ended, as "Requests decided" tells them apart: allowed by a decision
 * (`approved`), ran unheld and flagged (`flagged`: watch, a sandbox origin), or `refused`. */
export function decidedOutcome(d: Pick<RecentCommit, "decision" | "flagged">): { outcome: "approved" | "flagged" | "refused"; words: string } {
  if (d.flagged) return { outcome: "flagged", words: d.decision.mode === "watch" ? "Flagged (ran in watch)" : "Flagged (ran unheld)" };
  const s = d.decision.status;
  if (s === "approved" || s === "edited" || s === "auto") return { outcome: "approved", words: "Approved" };
  return { outcome: "refused", words: s === "timeout" ? "Refused (no answer in time)" : "Refused" };
}

/** A time of day as `HH:MM:SS`, in this browser's time zone. */
export function clockTime(at: number): string {
  const d = new Date(at);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
}

/** The note the overlay shows for a request that committed unheld: `committed: POST shop.test/orders`. */
export function committedNote(d: Pick<CommitDecided, "request">): string {
  const r = d.request;
  let where = r.url;
  try {
    const u = new URL(r.url);
    where = `${u.host}${u.pathname === "/" ? "" : u.pathname}`;
  } catch {
    // not a URL the browser parses: shown as it is
  }
  const what = r.kind === "download" ? "download" : r.kind === "navigation" ? "opened" : r.method;
  return `committed: ${what} ${where}`;
}

/** What a `tree.node` event's kind says the search is doing. */
const DOING: Record<string, string> = {
  scored: "scoring",
  replayed: "replaying",
  executed: "executing",
  expanded: "expanding",
  stale: "went stale",
  path: "finished",
};

/** The overlay's line for a tree search: `tree: node 5 ← 2, depth 2, replaying`. */
export function treeLine(b: TreeBranch): string {
  const up = b.parent === null ? "" : ` ← ${b.parent}`;
  return `tree: node ${b.node}${up}, depth ${b.depth}${b.doing ? `, ${b.doing}` : ""}`;
}

export class SessionViews {
  private views = new Map<string, SessionView>();
  /** Per session, each reported node's parent and depth (to name the branch being tried). */
  private trees = new Map<string, Map<number, { parent: number | null; depth: number }>>();
  /** Per session, the current observation's AX tree (to name candidates' targets). */
  private axtrees = new Map<string, string>();
  private recent: RecentCommit[] = [];
  /** Per session, the observation's step at which a request last committed (it ran). */
  private committedAt = new Map<string, number>();

  get(sessionId: string): SessionView | null {
    return this.views.get(sessionId) ?? null;
  }

  ensure(sessionId: string, intent = ""): SessionView {
    let v = this.views.get(sessionId);
    if (!v) {
      v = { sessionId, intent, checklist: [], rewards: [], last: null, step: null, url: null, mode: null, flags: [], progress: {}, approvals: [], stalled: null, tree: null };
      this.views.set(sessionId, v);
    }
    if (intent) v.intent = intent;
    return v;
  }

  checklist(sessionId: string, items: ChecklistItem[]): SessionView {
    const v = this.ensure(sessionId);
    v.checklist = items;
    return v;
  }

  /** A candidate's streamed text so far (raw; shown through `streamedFeedback`): its first sample's text so far, or null for a delta of
   * another sample (the samples of one candidate stream side by side; joined, they interleave). */
  progress(sessionId: string, candidate: number, sample: number, delta: string): string | null {
    if (sample !== 0) return null;
    const v = this.ensure(sessionId);
    v.progress[candidate] = (v.progress[candidate] ?? "") + delta;
    return v.progress[candidate]!;
  }

  /** A new observation of the session's page (`step`, its URL and AX tree): what was scored on
   * an earlier one no longer belongs on the page, so it goes before anything new is drawn. */
  observed(sessionId: string, step: number, url: string | null, axtree: string | null): SessionView {
    const v = this.ensure(sessionId);
    if (v.step !== null && step < v.step) return v; // a late event of an older page
    this.advance(v, step);
    v.url = url;
    if (axtree !== null) this.axtrees.set(sessionId, axtree);
    return v;
  }

  /** Moves the view to observation `step`, dropping what was scored on an earlier one. */
  private advance(v: SessionView, step: number): void {
    if (v.step !== null && step <= v.step) return;
    if (step > (v.step ?? -1) && v.step !== null) v.url = null; // not known until observed
    v.step = step;
    if (v.last && v.last.scored.step < step) v.last = null;
    v.progress = {};
  }

  /** A scored step; `candidates` from our own request, or from the event itself. */
  scored(scored: Scored, candidates: Candidate[] | undefined): SessionView {
    const v = this.ensure(scored.session_id);
    const cands = candidates ?? (scored.candidates as Candidate[] | undefined) ?? [];
    const best = scored.results.find((r) => r.index === scored.best)?.reward ?? null;
    const same = v.last?.scored.step === scored.step;
    if (same) {
      // the same step again (our reply and the subscription's event, or a re-score): replace it
      if (cands.length === 0) return v;
      v.rewards[v.rewards.length - 1] = best;
    } else {
      v.rewards.push(best);
    }
    if (v.step !== null && scored.step < v.step) return v; // scored on a page no longer shown: the curve only
    this.advance(v, scored.step);
    const axtree = this.axtrees.get(scored.session_id) ?? "";
    const targets = cands.map((c) => {
      const bid = targetBid(c.action);
      return bid === null ? null : axTarget(axtree, bid);
    });
    v.last = { candidates: cands, scored, targets };
    v.progress = {};
    // a stall at step t holds through step t+1's scoring (its action may stall again)
    if (v.stalled && scored.step >= v.stalled.step + 2) v.stalled = null;
    return v;
  }

  /** A live process signal; only `stalled` changes the view (null: nothing to redraw). */
  signal(sig: Signal): SessionView | null {
    if (sig.kind !== "stalled") return null;
    const v = this.ensure(sig.session_id);
    const steps = sig.stalled_steps ?? 0;
    // a request that committed within the stalled steps moved the task on (the checklist's
    // labels may not say so yet): not stalled
    const committed = this.committedAt.get(sig.session_id);
    if (committed !== undefined && committed > sig.step - steps) {
      v.stalled = null;
      return v;
    }
    v.stalled = { step: sig.step, steps, detail: sig.detail ?? "" };
    return v;
  }

  /** A node of a tree search, new or changed: the branch being tried is its `trying` node. */
  treeNode(ev: TreeNodeEvent): SessionView {
    const v = this.ensure(ev.session_id);
    let nodes = this.trees.get(ev.session_id);
    if (!nodes) this.trees.set(ev.session_id, (nodes = new Map()));
    nodes.set(ev.node, { parent: ev.parent ?? null, depth: ev.depth });
    const id = ev.trying ?? ev.node;
    const at = nodes.get(id) ?? { parent: null, depth: 0 };
    v.tree = { node: id, parent: at.parent, depth: at.depth, doing: DOING[ev.event] ?? "" };
    return v;
  }

  approval(req: ApprovalRequest): SessionView {
    const v = this.ensure(req.session_id);
    // a step held on a newer page: the older page's scores go (a paused request is of this page)
    if (req.reason !== "commit") this.advance(v, req.step);
    if (!v.approvals.some((a) => a.request_id === req.request_id)) v.approvals.push(req);
    v.progress = {}; // the step is scored: its feedback is the request's, parsed
    return v;
  }

  resolved(requestId: string): SessionView | null {
    for (const v of this.views.values()) {
      const n = v.approvals.length;
      v.approvals = v.approvals.filter((a) => a.request_id !== requestId);
      if (v.approvals.length !== n) return v;
    }
    return null;
  }

  /** The session's mode, from `session.started`, `mode.set` or a session summary. */
  mode(sessionId: string, mode: CommitMode | null | undefined): SessionView | null {
    if (!mode) return null;
    const v = this.ensure(sessionId);
    v.mode = mode;
    return v;
  }

  /** A paused request decided: kept for the panel; one that ran flagged becomes an overlay note. */
  commitDecided(d: CommitDecided, at: number = Date.now()): SessionView | null {
    this.recent.push({ session_id: d.session_id, request: d.request, decision: d.decision, flagged: d.flagged ?? false, at });
    if (this.recent.length > MAX_RECENT) this.recent.splice(0, this.recent.length - MAX_RECENT);
    const v = this.views.get(d.session_id);
    if (!v) return null;
    if (d.decision.mode) v.mode = d.decision.mode;
    const ran = d.flagged || d.decision.status === "approved" || d.decision.status === "auto" || d.decision.status === "edited";
    if (ran) {
      // it committed: whatever stalled before, the task moved
      this.committedAt.set(d.session_id, v.step ?? 0);
      v.stalled = null;
    }
    if (!d.flagged) return v;
    v.flags = [...v.flags, committedNote(d)].slice(-MAX_FLAGS);
    return v;
  }

  /** The paused requests decided lately, newest last. */
  recentCommits(): RecentCommit[] {
    return [...this.recent];
  }

  /** The followed sessions and their modes (the side panel's control). */
  modes(ids: readonly string[]): SessionMode[] {
    return ids.map((id) => this.ensure(id)).map((v) => ({ sessionId: v.sessionId, intent: v.intent, mode: v.mode }));
  }

  /** The action of the session's latest decided step and its target's bid (what most likely
   * caused a request paused now), or null. */
  lastDecided(sessionId: string): { action: string; element: string | null } | null {
    const d = this.views.get(sessionId)?.last?.scored.decision;
    if (!d?.action || (d.status !== "auto" && d.status !== "approved" && d.status !== "edited")) return null;
    return { action: d.action, element: targetBid(d.action) };
  }

  /** Every open approval request, oldest session first (what the side panel and popup list). */
  pending(): PendingApproval[] {
    return [...this.views.values()].flatMap((v) => v.approvals.map((request) => ({ request, intent: v.intent })));
  }

  pendingApprovals(): number {
    let n = 0;
    for (const v of this.views.values()) n += v.approvals.length;
    return n;
  }

  drop(sessionId: string): void {
    this.views.delete(sessionId);
    this.trees.delete(sessionId);
    this.axtrees.delete(sessionId);
    this.committedAt.delete(sessionId);
  }
}

/** Where the judge's judgement starts (daemon/engine/labels.py's start markers). */
const JUDGEMENT_MARKERS = ["<answer>", "CHECKLIST EVALUATION:"];

/** The feedback paragraph of a judge's streamed text: what precedes its judgement region (the
 * daemon's `feedback_text`), so the `<answer>` block never shows while it streams. */
export function streamedFeedback(text: string): string {
  const at = JUDGEMENT_MARKERS.map((m) => text.indexOf(m)).filter((i) => i >= 0);
  return (at.length > 0 ? text.slice(0, Math.min(...at)) : text).trim();
}
