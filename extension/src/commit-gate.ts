/**
 * The browser holds what commits: in a tab that follows a live session (not a demonstration),
 * while this browser is paired, the CDP Fetch domain on the tab's one debugger attachment
 * pauses every request before it leaves (and each document's response, to see a download).
 * One that commits (commit-hold.ts) goes to the daemon as `commit.check`; it continues only
 * when the `commit.decided` is approved and names this very request's digest, and is failed
 * otherwise (refusal-response.ts: a document so that its page stays): on a refusal, a lost
 * connection or any error. Nothing stays paused: every paused request is continued or failed.
 *
 * Failing closed when the decider is gone: a request being asked about is written to
 * `chrome.storage.session` first, and a worker that starts finds those its last incarnation
 * left paused (the debugger stays attached when the worker stops) and fails them. A tab that
 * stops holding (the session ended, the tab unfollowed, the pairing revoked) has its
 * undecided requests failed before `Fetch.disable`, which would let them go.
 *
 * Downloads of every kind (an attachment, a type the browser does not show, the `download`
 * attribute on any type, `data:` and `blob:` URLs, which send no request at all) wait in
 * `chrome.downloads.onDeterminingFilename`, paused, before the file is saved: asked as a
 * `download` whose card lists the file's name, type and size and the page it came from;
 * cancelled unless approved. (An automation client that took the browser's downloads over,
 * as Playwright's `acceptDownloads` does, bypasses that step: the Python gate holds there.)
 *
 * Every target a held tab starts is held from its first request (child-targets.ts): its
 * out-of-process frames and its workers through auto-attached child sessions, and a tab it
 * opens (`target=_blank`, `window.open`) as the opener's session from the moment the browser
 * names its opener.
 */
import { cdpForTab, type CdpSend } from "./capture/cdp.js";
import { ChildTargets, type AttachedTarget } from "./child-targets.js";
import { commitKind, dataUrlSize, downloadFields, downloadOrigin, heldRequest, isAttachment, requestDigest, urlOrigin } from "./commit-hold.js";
import type { DaemonConnection } from "./connection.js";
import { refuse } from "./refusal-response.js";
import type { CommitDecided, HeldRequest } from "./protocol.gen.js";
import type { TabSession } from "./tab-sessions.js";
import { SocketHold, socketRequest, type BindingCalled } from "./websocket-hold.js";

export interface GateContext {
  session(tabId: number): TabSession | undefined;
  /** Whether this browser holds commits now (it is paired with the daemon). */
  holding(): boolean;
  connection(): DaemonConnection | null;
  /** The action that most likely caused a request now (the session's latest decided step). */
  trigger(sessionId: string): { action: string; element: string | null } | null;
  /** The daemon's answer, for the overlay's flags and the panel. */
  decided(tabId: number, answer: CommitDecided): void;
}

/** What Fetch.requestPaused carries (the part read here). */
export interface Paused {
  requestId: string;
  request: {
    url: string;
    method: string;
    headers?: Record<string, string>;
    postData?: string;
    postDataEntries?: { bytes?: string }[];
  };
  frameId?: string;
  resourceType?: string;
  responseStatusCode?: number;
  responseErrorReason?: string;
  responseHeaders?: { name: string; value: string }[];
}

/** Where the requests being asked about are kept across a worker's restart. */
const ASKING_KEY = "pausedRequests";

/** Why a request was refused without an answer, as the panel and the overlay say it. */
export const GONE = {
  restarted: "the extension's service worker stopped while this request waited for its answer; a request whose decider is gone is refused, never sent",
  unfollowed: "the tab stopped following the session (it ended, or the tab was closed or unfollowed) while this request waited; refused, never sent",
  unpaired: "this browser's pairing was removed while this request waited; refused, never sent",
} as const;

/** A paused request this worker has not let go or failed yet. */
interface Open {
  tabId: number;
  requestId: string;
  /** `asking`: its commit.check is out (kept in storage); `judging`: being read. */
  state: "judging" | "asking";
  /** A download's id (chrome.downloads): cancelled rather than failed. */
  download?: number;
  /** The child session (a frame's or a worker's) it was paused in; none: the tab's own. */
  child?: string;
  sessionId?: string;
  request?: HeldRequest;
  digest?: string;
  /** Its resource type (a `Document` is refused so that its page stays), and the answer. */
  resourceType?: string;
  answer?: CommitDecided;
}

const openKey = (tabId: number, requestId: string, child?: string) => (child ? `${tabId} ${child} ${requestId}` : `${tabId} ${requestId}`);

/** A `send` bound to the tab's own session, or to one of its child sessions. */
async function sessionFor(tabId: number, child: string | undefined): Promise<CdpSend> {
  if (child === undefined) return cdpForTab(tabId);
  return (method, params) => chrome.debugger.sendCommand({ tabId, sessionId: child }, method, params) as Promise<any>;
}

/** Downloads a page began (Page.downloadWillBegin), to tell which tab a download came from. */
interface Begun {
  tabId: number;
  url: string;
  at: number;
}
const BEGUN_MS = 30_000;
/** How long a download waits for its tab's Page.downloadWillBegin before the referrer decides. */
const BEGUN_WAIT_MS = 500;

/** What chrome.downloads says of a download (the part read here). */
export interface DownloadInfo {
  id: number;
  url: string;
  finalUrl?: string;
  referrer?: string;
  filename?: string;
  mime?: string;
  totalBytes?: number;
  fileSize?: number;
}

const PATTERNS = [
  { urlPattern: "*", requestStage: "Request" },
  { urlPattern: "*", resourceType: "Document", requestStage: "Response" },
];

function header(headers: Record<string, string> | undefined, name: string): string | null {
  for (const [k, v] of Object.entries(headers ?? {})) if (k.toLowerCase() === name) return v;
  return null;
}

/** The body the browser would send, as bytes (its entries when given, else its text). */
export function bodyBytes(req: Paused["request"]): Uint8Array | null {
  if (req.postDataEntries && req.postDataEntries.length > 0) {
    const parts = req.postDataEntries.map((e) => Uint8Array.from(atob(e.bytes ?? ""), (c) => c.charCodeAt(0)));
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
  return req.postData ? new TextEncoder().encode(req.postData) : null;
}

/** The session's origin, as urlOrigin writes it (a page hook's sender origin). */
function sessionOrigin(s: TabSession): string | null {
  if (!s.origin || s.origin === "null") return null;
  return s.origin === "file://" ? "file://" : (urlOrigin(`${s.origin}/`) ?? s.origin);
}

export class CommitGate {
  private readonly on = new Set<number>();
  /** Each held tab's main frame (read when its hold starts: asked while a navigation is
   * paused, the browser would not answer before it goes on). */
  private readonly mainFrames = new Map<number, string>();

  /** Paused requests not yet continued or failed (noted as their event arrives). */
  private readonly open = new Map<string, Open>();
  /** Requests failed while their check was out: its answer, when it comes, lets nothing go. */
  private readonly failed = new Set<string>();
  private saving: Promise<void> = Promise.resolve();
  private begun: Begun[] = [];
  /** Downloads approved at their response (an attachment): `tabId url`, not asked twice. */
  private readonly approvedDownloads = new Map<string, number>();

  /** Tabs opened by a held tab, held as its session: tab -> the followed tab (in memory: a
   * restarted worker holds them no more, and fails what they left paused). */
  private readonly adopted = new Map<number, number>();
  private readonly children = new ChildTargets(async (tabId, child, method, params) => (await sessionFor(tabId, child))(method, params), PATTERNS);

  /** Its pages' WebSocket messages, held through a page-world wrapper (websocket-hold.ts). */
  private readonly sockets = new SocketHold();

  constructor(private readonly ctx: GateContext) {}

  /** A request paused (called as its event arrives, before anything else runs). */
  noted(tabId: number, requestId: string, child?: string): void {
    this.open.set(openKey(tabId, requestId, child), { tabId, requestId, state: "judging", child });
  }

  /** The session that holds the tab: its own, or (a tab it opened) its opener's. */
  private session(tabId: number): TabSession | undefined {
    const by = this.adopted.get(tabId);
    return this.ctx.session(tabId) ?? (by === undefined ? undefined : this.ctx.session(by));
  }

  /** A tab opened by `openerTabId` (tabs.onCreated, webNavigation.onCreatedNavigationTarget):
   * held as the opener's session when the opener is held, its Fetch on first. */
  async opened(tabId: number, openerTabId: number | undefined): Promise<void> {
    if (openerTabId === undefined || tabId === openerTabId || this.ctx.session(tabId) || this.adopted.has(tabId)) return;
    if (!this.holds(openerTabId)) return;
    this.adopted.set(tabId, this.adopted.get(openerTabId) ?? openerTabId);
    await this.sync(tabId);
  }

  /** The tabs held as their opener's session. */
  adoptedTabs(): number[] {
    return [...this.adopted.keys()];
  }

  /** A child target of a held tab attached (Target.attachedToTarget): held before it runs. */
  async attached(tabId: number, child: AttachedTarget): Promise<void> {
    await this.children.attached(tabId, child, this.on.has(tabId) && this.holds(tabId));
  }

  /** A child target went away (Target.detachedFromTarget). */
  childDetached(sessionId: string): void {
    this.children.detached(sessionId);
  }

  /** The requests being asked about, written where a restarted worker finds them. */
  private persist(): Promise<void> {
    const asking = [...this.open.values()].filter((o) => o.state === "asking");
    this.saving = this.saving.then(() => chrome.storage.session.set({ [ASKING_KEY]: asking })).catch((err) => console.warn("webshepherd: paused requests not kept", err));
    return this.saving;
  }

  /** At the worker's start: the requests its last incarnation left waiting are failed (their
   * decider is gone), and the panel says why. */
  async recover(): Promise<number> {
    const got = await chrome.storage.session.get(ASKING_KEY);
    const left = (got[ASKING_KEY] ?? []) as Open[];
    await chrome.storage.session.remove(ASKING_KEY);
    for (const o of left) await this.fail(o, GONE.restarted);
    return left.length;
  }

  /** Fails a paused request that nothing will decide now, and says why. */
  private async fail(o: Open, why: string): Promise<void> {
    const key = openKey(o.tabId, o.requestId, o.child);
    this.failed.add(key);
    this.open.delete(key);
    try {
      if (o.download !== undefined) {
        await chrome.downloads.cancel(o.download);
      } else {
        const send = await sessionFor(o.tabId, o.child);
        await refuse(send, o.tabId, o.requestId, o.resourceType, o.request ?? null, { status: "rejected", by: "webshepherd extension", note: why });
      }
    } catch {
      return; // the tab, or its request, is gone: nothing was sent
    }
    if (o.request && o.sessionId && o.digest) {
      const decision = { status: "rejected" as const, by: "webshepherd extension", note: why };
      this.ctx.decided(o.tabId, { type: "commit.decided", session_id: o.sessionId, request: o.request, request_digest: o.digest, decision, flagged: false });
    }
  }

  /** Every undecided paused request of the tab, failed (before Fetch.disable, which lets
   * whatever is still paused go). */
  private async failTab(tabId: number, why: string): Promise<void> {
    const mine = [...this.open.values()].filter((o) => o.tabId === tabId);
    for (const o of mine) await this.fail(o, why);
    if (mine.some((o) => o.state === "asking")) await this.persist();
  }

  /** Whether `tabId`'s requests are held now. */
  holds(tabId: number): boolean {
    const s = this.session(tabId);
    return this.ctx.holding() && s !== undefined && !s.demonstration;
  }

  /** Turns the tab's hold on or off as its session and the pairing say. */
  async sync(tabId: number): Promise<void> {
    if (this.holds(tabId)) {
      const send = await cdpForTab(tabId);
      if (this.adopted.has(tabId) && !this.on.has(tabId)) {
        // a tab just opened: its first request may be under way, so Fetch goes on first; its
        // page may not answer yet (a client that opened it holds it), so its frames come later
        await send("Fetch.enable", { patterns: PATTERNS });
        this.on.add(tabId);
        await this.children.holdTab(tabId);
        void send("Page.enable").catch(() => undefined);
        return;
      }
      const tree = await send<{ frameTree: { frame: { id: string } } }>("Page.getFrameTree");
      this.mainFrames.set(tabId, tree.frameTree.frame.id); // a tab's main frame keeps its id across navigations
      await send("Page.enable"); // its Page.downloadWillBegin names the tab a download came from
      await send("Fetch.enable", { patterns: PATTERNS }); // again after a restarted worker: idempotent
      this.on.add(tabId);
      await this.children.holdTab(tabId); // its frames and workers, and no shared worker
      await this.sockets.hold(tabId, send); // its pages' WebSocket messages
    } else if (this.on.delete(tabId)) {
      this.mainFrames.delete(tabId);
      const send = await cdpForTab(tabId);
      // the events of requests paused so far arrive before this reply: all of them are noted
      await send("Fetch.enable", { patterns: PATTERNS }).catch(() => undefined);
      await this.failTab(tabId, this.ctx.holding() ? GONE.unfollowed : GONE.unpaired);
      await this.children.releaseTab(tabId);
      await this.sockets.release(tabId, send); // messages waiting are refused
      await send("Fetch.disable").catch(() => undefined);
      // the tabs it opened stop holding with it
      const opened = [...this.adopted].filter(([, by]) => by === tabId).map(([tab]) => tab);
      for (const tab of opened) this.adopted.delete(tab);
      for (const tab of opened) await this.sync(tab).catch(() => undefined);
    }
  }

  /** The debugger went away (the tab closed, or the person cancelled it): nothing is held there. */
  detached(tabId: number): void {
    this.on.delete(tabId);
    this.adopted.delete(tabId);
    this.mainFrames.delete(tabId);
    this.sockets.detached(tabId);
    for (const [key, o] of this.open) if (o.tabId === tabId) this.open.delete(key);
  }

  /** A held tab's page-world wrapper asks about a WebSocket message (Runtime.bindingCalled):
   * it is sent only when approved, through the same asking as a request; else its socket closes. */
  async socketAsked(tabId: number, event: BindingCalled): Promise<void> {
    const send = await cdpForTab(tabId);
    await this.sockets.called(send, event, async (ask) => {
      const s = this.session(tabId);
      if (!s || !this.holds(tabId)) return false; // its hold ended as it asked: refused
      const tab = await chrome.tabs.get(tabId).catch(() => null);
      const requestId = `socket-${event.executionContextId}-${ask.id}`;
      const key = openKey(tabId, requestId);
      const open: Open = { tabId, requestId, state: "judging" };
      this.open.set(key, open);
      try {
        const go = await this.ask(tabId, s.sessionId, socketRequest(ask, tab?.url ?? null, this.ctx.trigger(s.sessionId)), open);
        return go && this.open.has(key); // failed meanwhile (the hold ended): refused
      } finally {
        this.failed.delete(key);
        if (this.open.delete(key) && open.state === "asking") void this.persist();
      }
    });
  }

  /** A page of the tab began a download (Page.downloadWillBegin). */
  downloadBegun(tabId: number, url: string): void {
    const now = Date.now();
    this.begun = [...this.begun.filter((b) => now - b.at < BEGUN_MS), { tabId, url, at: now }];
  }

  /** The held tab a download came from: the one whose page began it, else the one on the
   * referrer's origin (a `blob:` URL's own), else, with no referrer, the first held tab. */
  private async downloadTab(item: DownloadInfo): Promise<number | null> {
    if (this.on.size === 0) return null;
    const urls = new Set([item.url, item.finalUrl].filter((u): u is string => Boolean(u)));
    for (let waited = 0; ; waited += 50) {
      const hit = this.begun.find((b) => urls.has(b.url) && this.on.has(b.tabId));
      if (hit) {
        this.begun = this.begun.filter((b) => b !== hit);
        return hit.tabId;
      }
      if (waited >= BEGUN_WAIT_MS) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const from = (item.referrer ? urlOrigin(item.referrer) : null) ?? downloadOrigin(item.url);
    for (const tabId of this.on) {
      const tab = await chrome.tabs.get(tabId).catch(() => null);
      if (from !== null && tab?.url && urlOrigin(tab.url) === from) return tabId;
    }
    return from === null ? ([...this.on][0] ?? null) : null;
  }

  /** A download about to be saved (onDeterminingFilename, its file not named yet): it waits,
   * paused, for its answer; `suggest` lets it be saved, and it is cancelled otherwise. */
  async download(item: DownloadInfo, suggest: () => void): Promise<void> {
    const tabId = await this.downloadTab(item).catch(() => null);
    const s = tabId === null ? undefined : this.session(tabId);
    const url = item.finalUrl || item.url;
    if (tabId === null || !s || !this.holds(tabId) || this.tookApproved(tabId, url)) return suggest();
    const key = openKey(tabId, `download-${item.id}`);
    const open: Open = { tabId, requestId: `download-${item.id}`, state: "judging", download: item.id };
    this.open.set(key, open);
    await chrome.downloads.pause(item.id).catch(() => undefined); // nothing more of it is written meanwhile
    let go = false;
    try {
      const tab = await chrome.tabs.get(tabId).catch(() => null);
      const trigger = this.ctx.trigger(s.sessionId);
      const bytes = dataUrlSize(url) ?? (item.totalBytes && item.totalBytes > 0 ? item.totalBytes : null);
      const req = heldRequest({
        method: "GET",
        url,
        kind: "download",
        pageUrl: tab?.url ?? (item.referrer || null),
        trigger: trigger?.action ?? null,
        element: trigger?.element ?? null,
        fields: downloadFields(item.filename ?? "", item.mime ?? "", bytes),
      });
      go = await this.ask(tabId, s.sessionId, req, open);
    } catch (err) {
      console.warn("webshepherd: a download failed closed", err);
    }
    if (this.failed.delete(key) || !this.open.delete(key)) return; // cancelled already
    if (open.state === "asking") void this.persist();
    if (go) {
      suggest();
      await chrome.downloads.resume(item.id).catch(() => undefined);
    } else {
      await chrome.downloads.cancel(item.id).catch(() => undefined);
    }
  }

  /** Whether the tab's download of `url` was approved at its response (and forgets it). */
  private tookApproved(tabId: number, url: string): boolean {
    const key = `${tabId} ${url}`;
    const at = this.approvedDownloads.get(key);
    this.approvedDownloads.delete(key);
    return at !== undefined && Date.now() - at < BEGUN_MS;
  }

  /** A paused request: continued, or failed, never left. */
  async paused(tabId: number, p: Paused, child?: string): Promise<void> {
    const key = openKey(tabId, p.requestId, child);
    if (!this.open.has(key)) this.noted(tabId, p.requestId, child);
    const o = this.open.get(key)!;
    o.resourceType = p.resourceType;
    let go = false;
    try {
      go = await this.judge(tabId, p, child);
    } catch (err) {
      console.warn("webshepherd: a paused request failed closed", err);
      go = false;
    }
    const asked = this.open.get(key)?.state === "asking";
    if (this.failed.delete(key) || !this.open.delete(key)) return; // failed already (its decider went away)
    if (asked) void this.persist();
    const send = await sessionFor(tabId, child);
    const done = go
      ? send("Fetch.continueRequest", { requestId: p.requestId })
      : refuse(send, tabId, p.requestId, p.resourceType, o.request ?? null, o.answer?.decision ?? null);
    await done.catch(() => undefined); // the tab or its request is gone
  }

  /** Whether the request may go on. */
  private async judge(tabId: number, p: Paused, child?: string): Promise<boolean> {
    const s = this.session(tabId);
    if (!s || !this.holds(tabId)) return true; // a tab that no longer holds: the Python gate's job there
    const response = p.responseStatusCode !== undefined || p.responseErrorReason !== undefined;
    const download = response && isAttachment(p.responseHeaders);
    if (response && !download) return true;
    // a document of the main frame (a frame we cannot tell counts as the page's own: held, not
    // waved through); a child session's documents are frames
    const main = this.mainFrames.get(tabId);
    const topLevel = p.resourceType === "Document" && child === undefined && (main === undefined || p.frameId === undefined || p.frameId === main);
    const kind = commitKind(p.request.method, p.request.url, { topLevelNavigation: topLevel, sessionOrigin: sessionOrigin(s), download, commits: s.commits });
    if (kind === null) return true;
    const tab = await chrome.tabs.get(tabId).catch(() => null);
    const trigger = this.ctx.trigger(s.sessionId);
    const req: HeldRequest = heldRequest({
      method: p.request.method,
      url: p.request.url,
      kind,
      topLevel,
      body: response ? null : bodyBytes(p.request),
      contentType: header(p.request.headers, "content-type"),
      pageUrl: tab?.url ?? null,
      trigger: trigger?.action ?? null,
      element: trigger?.element ?? null,
    });
    const open = this.open.get(openKey(tabId, p.requestId, child));
    if (!open) return false; // failed while it was read
    const go = await this.ask(tabId, s.sessionId, req, open);
    if (go && download) this.approvedDownloads.set(`${tabId} ${p.request.url}`, Date.now()); // not asked again when it is saved
    return go;
  }

  /** Asks the daemon about a held request; true only for an approval of this very request. */
  private async ask(tabId: number, sessionId: string, req: HeldRequest, open: Open): Promise<boolean> {
    const digest = await requestDigest(req);
    const conn = this.ctx.connection();
    if (!conn || conn.state !== "connected") return false; // nobody to ask: fail closed
    if (!this.open.has(openKey(tabId, open.requestId, open.child))) return false; // failed while it was read
    Object.assign(open, { state: "asking", sessionId, request: req, digest });
    await this.persist(); // kept before anyone is asked: a restarted worker fails it
    const answer = await conn.request({ type: "commit.check", session_id: sessionId, request: req });
    if (answer.type !== "commit.decided") return false;
    open.answer = answer;
    this.ctx.decided(tabId, answer);
    return answer.decision.status === "approved" && answer.request_digest === digest;
  }
}
