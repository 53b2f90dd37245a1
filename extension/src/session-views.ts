/** The overlay's state per session, updated from daemon messages (pure; the worker owns one). */
import type { PendingApproval, SessionView, TreeBranch } from "./messages.js";
import type { ApprovalRequest, Candidate, ChecklistItem, Scored, Signal, TreeNodeEvent } from "./protocol.gen.js";

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

  get(sessionId: string): SessionView | null {
    return this.views.get(sessionId) ?? null;
  }

  ensure(sessionId: string, intent = ""): SessionView {
    let v = this.views.get(sessionId);
    if (!v) {
      v = { sessionId, intent, checklist: [], rewards: [], last: null, progress: {}, approvals: [], stalled: null, tree: null };
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

  /** A scored step; `candidates` from our own request, or from the event itself. */
  scored(scored: Scored, candidates: Candidate[] | undefined): SessionView {
    const v = this.ensure(scored.session_id);
    const cands = candidates ?? (scored.candidates as Candidate[] | undefined) ?? [];
    const best = scored.results.find((r) => r.index === scored.best)?.reward ?? null;
    if (v.last?.scored.step === scored.step) {
      // the same step again (our reply and the subscription's event, or a re-score): replace it
      if (cands.length === 0) return v;
      v.rewards[v.rewards.length - 1] = best;
    } else {
      v.rewards.push(best);
    }
    v.last = { candidates: cands, scored };
    v.progress = {};
    // a stall at step t holds through step t+1's scoring (its action may stall again)
    if (v.stalled && scored.step >= v.stalled.step + 2) v.stalled = null;
    return v;
  }

  /** A live process signal; only `stalled` changes the view (null: nothing to redraw). */
  signal(sig: Signal): SessionView | null {
    if (sig.kind !== "stalled") return null;
    const v = this.ensure(sig.session_id);
    v.stalled = { step: sig.step, steps: sig.stalled_steps ?? 0, detail: sig.detail ?? "" };
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
