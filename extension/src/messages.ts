/** Typed messages between the service worker and the content script. */
import type { ConnState } from "./connection.js";
import type { HookReply, HookRequest } from "./page-hook.js";
import type { ApprovalRequest, Candidate, ChecklistItem, CommitDecided, Scored } from "./protocol.gen.js";
import type { TabSession } from "./tab-sessions.js";

/** What the overlay draws for a session; the worker keeps it so a reloaded page can redraw. */
export interface SessionView {
  sessionId: string;
  intent: string;
  checklist: ChecklistItem[];
  /** Best reward of each scored step, in order. */
  rewards: (number | null)[];
  /** The latest scoring, only while it belongs to the current observation (`step`): a new
   *  observation or a step held on a new page clears it, so nothing stale is drawn. `targets`:
   *  each candidate's target as the observation's AX tree names it (role and name), or null. */
  last: { candidates: Candidate[]; scored: Scored; targets: (string | null)[] } | null;
  /** The current observation: its step and URL (null: none seen yet). */
  step: number | null;
  url: string | null;
  /** The session's mode (ask / watch / stop); null: not known yet. */
  mode: CommitMode | null;
  /** Requests that committed unheld (watch mode, a sandbox origin), newest last: the overlay's notes. */
  flags: string[];
  /** Feedback streaming in for the current request, per candidate. */
  progress: Record<number, string>;
  approvals: ApprovalRequest[];
  /** The latest `stalled` signal while it holds: no checklist item advanced for `steps`
   *  executed steps (cleared once two later steps are scored without a new one). */
  stalled: { step: number; steps: number; detail: string } | null;
  /** A tree search's branch being tried (from its latest `tree.node` event): the node, its
   *  parent and depth, and what the search does now (e.g. "replaying"); null: no tree. */
  tree: TreeBranch | null;
}

export interface TreeBranch {
  node: number;
  parent: number | null;
  depth: number;
  doing: string;
}

/** This browser's connection to the daemon (the token's side): its state, why it is not
 *  connected (`detail`), the daemon URL, and whether a token is set. */
export interface LinkState {
  conn: ConnState;
  detail: string | null;
  url: string;
  token: boolean;
}

/** Whether this browser decides approvals: paired as a person (under `name`), or why not
 *  (`note`); and its connection to the daemon (`link`). */
export interface PairingState {
  paired: boolean;
  name: string | null;
  note: string | null;
  link: LinkState;
}

/** What the extension's pages say when this browser is not paired. */
export const HOW_TO_PAIR = "This browser is not paired, so it decides nothing here: run `webshepherd pair extension` in a terminal and enter the code under “Pair as a person” in the extension's options page.";

/** A pending approval as the extension's own pages list it. */
export interface PendingApproval {
  request: ApprovalRequest;
  intent: string;
}

export type Decision = "approve" | "reject" | "edit";

export type CommitMode = "ask" | "watch" | "stop";

/** A followed session as the side panel's mode control lists it. */
export interface SessionMode {
  sessionId: string;
  intent: string;
  mode: CommitMode | null;
}

/** A paused request the daemon decided, as the extension's pages show it (newest last);
 * `at`: when this browser heard of it (ms since the epoch). */
export type RecentCommit = Pick<CommitDecided, "session_id" | "request" | "decision" | "flagged"> & { at: number };

/** content -> worker; the `Reply` type is what `sendResponse` gets. */
export type ToWorker =
  | { kind: "hook"; request: HookRequest }
  | { kind: "tab.state" }
  /** side panel / popup -> worker (refused from anything but the extension's own pages) */
  | { kind: "approval.decide"; requestId: string; decision: Decision; action: string | null; via: "panel" | "popup"; allowOrigin?: boolean }
  | { kind: "approvals.list" }
  /** side panel -> worker: the followed sessions and their modes; a paired person sets one */
  | { kind: "sessions.modes" }
  | { kind: "session.mode"; sessionId: string; mode: CommitMode }
  /** side panel / popup -> worker: the paused requests decided lately */
  | { kind: "commits.recent" }
  /** options page -> worker: pair with a one-time code from `webshepherd pair extension` */
  | { kind: "pair"; code: string }
  /** own pages -> worker: whether this browser may decide */
  | { kind: "pairing.state" }
  /** popup -> worker: a demonstration in a tab */
  | { kind: "demonstration.start"; tabId: number; intent: string }
  | { kind: "demonstration.stop"; tabId: number; outcome: "success" | "failure" | "unknown" }
  | { kind: "demonstration.state"; tabId: number }
  /** content -> worker: an action the person took */
  | { kind: "demonstration.action"; action: string };

export type WorkerReply<M extends ToWorker> = M extends { kind: "hook" }
  ? HookReply | null
  : M extends { kind: "tab.state" }
    ? { session: TabSession | null; view: SessionView | null; hook: boolean }
    : M extends { kind: "approvals.list" }
      ? PendingApproval[]
      : M extends { kind: "sessions.modes" }
        ? SessionMode[]
      : M extends { kind: "commits.recent" }
        ? RecentCommit[]
      : M extends { kind: "pairing.state" }
        ? PairingState
      : M extends { kind: "demonstration.state" }
        ? { connected: boolean; session: TabSession | null }
        : { ok: boolean; error?: string; sessionId?: string };

/**
 * worker -> content. `origin`: the page hook's session is drawn only on the origin that
 * started or attached it (absent: any, e.g. a demonstration).
 */
export type ToContent =
  | { kind: "view"; view: SessionView | null; origin?: string }
  | { kind: "progress"; candidate: number; text: string; origin?: string }
  | { kind: "approval.resolved"; requestId: string; decision: string; by: string | null }
  | { kind: "demonstration"; on: boolean }
  /** a paused request was refused: who refused it and why (refusal-response.ts) */
  | { kind: "refused"; text: string }
  /** around a screenshot for an observation: the overlay is no part of it (answered once painted) */
  | { kind: "overlay.hidden"; hidden: boolean };

export function sendToWorker<M extends ToWorker>(msg: M): Promise<WorkerReply<M>> {
  return chrome.runtime.sendMessage(msg) as Promise<WorkerReply<M>>;
}

/** worker -> the extension's own pages (side panel, popup): the pending approvals changed. */
export interface ToPages {
  kind: "approvals.changed";
}

export function sendToTab(tabId: number, msg: ToContent): void {
  chrome.tabs.sendMessage(tabId, msg).catch(() => undefined); // no content script (yet): nothing to draw on
}
