/**
 * The targets a held tab starts are held from their first request: the tab's debugger session
 * auto-attaches (flat sessions, waiting for the debugger) to its out-of-process frames, its
 * dedicated workers and the service workers of its pages; each child gets the tab's Fetch
 * patterns (and auto-attaches its own children) before it is let run. A child that cannot be
 * held is never let run. Shared workers cannot be held this way (no page target starts them):
 * a held tab's documents refuse `new SharedWorker`, with the reason (SHARED_WORKERS_BLOCKED),
 * as the Python gate's WORKERS_BLOCKED does.
 */

/** Sends a CDP command to the tab's own session (`session` undefined) or to one of its children. */
export type SessionSend = <T = unknown>(tabId: number, session: string | undefined, method: string, params?: Record<string, unknown>) => Promise<T>;

/** Why a page of a held tab cannot start a shared worker (the page's error). */
export const SHARED_WORKERS_BLOCKED = "webshepherd: shared workers are blocked in a tab whose requests are held (the extension cannot hold a shared worker's requests before they leave)";

/** Run in every document of a held tab before the page's scripts: `new SharedWorker` refuses. */
export const BLOCK_SHARED_WORKERS =
  "(() => { const why = " +
  JSON.stringify(SHARED_WORKERS_BLOCKED) +
  "; try { Object.defineProperty(globalThis, 'SharedWorker', {value: function SharedWorker() {" +
  " throw new DOMException(why, 'SecurityError'); }, writable: false, configurable: false}); } catch (e) {} })();";

/** Auto-attach as the hold wants it: every child waits until it is held. */
export const AUTO_ATTACH = { autoAttach: true, waitForDebuggerOnStart: true, flatten: true };

/** What Target.attachedToTarget carries (the part read here). */
export interface AttachedTarget {
  sessionId: string;
  targetInfo: { type: string; url?: string };
  waitingForDebugger?: boolean;
}

/** Target types with documents (the shared-worker refusal goes in before their scripts). */
const DOCUMENTS = new Set(["iframe", "page"]);

export class ChildTargets {
  /** Child session -> the held tab it belongs to. */
  private readonly tabs = new Map<string, number>();

  constructor(
    private readonly send: SessionSend,
    private readonly patterns: readonly object[],
  ) {}

  /** The tab's own session set up to hold its children and refuse shared workers. */
  async holdTab(tabId: number): Promise<void> {
    await this.send(tabId, undefined, "Page.addScriptToEvaluateOnNewDocument", { source: BLOCK_SHARED_WORKERS });
    // the document shown now (not awaited: a page that waits for a debugger does not answer yet)
    void this.send(tabId, undefined, "Runtime.evaluate", { expression: BLOCK_SHARED_WORKERS }).catch(() => undefined);
    await this.send(tabId, undefined, "Target.setAutoAttach", AUTO_ATTACH);
  }

  /** The tab lets its children go unheld again (its paused requests were failed first). */
  async releaseTab(tabId: number): Promise<void> {
    await this.send(tabId, undefined, "Target.setAutoAttach", { ...AUTO_ATTACH, autoAttach: false }).catch(() => undefined);
    for (const [session, tab] of this.tabs) if (tab === tabId) this.tabs.delete(session);
  }

  /** A child attached (Target.attachedToTarget from the tab's session or a child's): held, then
   * let run; one the tab no longer holds runs unheld; one that cannot be held stays waiting. */
  async attached(tabId: number, child: AttachedTarget, holds: boolean): Promise<void> {
    const session = child.sessionId;
    if (holds) {
      try {
        await this.send(tabId, session, "Fetch.enable", { patterns: this.patterns });
        this.tabs.set(session, tabId);
        if (DOCUMENTS.has(child.targetInfo.type)) await this.send(tabId, session, "Page.addScriptToEvaluateOnNewDocument", { source: BLOCK_SHARED_WORKERS });
        // its own frames and workers (a worker without the Target domain has none to hold)
        await this.send(tabId, session, "Target.setAutoAttach", AUTO_ATTACH).catch(() => undefined);
      } catch (err) {
        console.warn(`webshepherd: a ${child.targetInfo.type} of a held tab could not be held; it does not run`, err);
        return;
      }
    }
    if (child.waitingForDebugger !== false) await this.send(tabId, session, "Runtime.runIfWaitingForDebugger").catch(() => undefined);
  }

  /** A child went away (Target.detachedFromTarget). */
  detached(sessionId: string): void {
    this.tabs.delete(sessionId);
  }

  /** Whether `sessionId` is a child this hold set up. */
  has(sessionId: string): boolean {
    return this.tabs.has(sessionId);
  }
}
