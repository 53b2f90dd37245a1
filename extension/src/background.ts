/**
 * The service worker: one connection to the daemon, the sessions each tab
 * follows, observations on load / navigation / request, the page hook, the
 * overlay's state and approvals.
 */
import { showBadge } from "./badge.js";
import { detachTab, onDetached } from "./capture/cdp.js";
import type { AttachedTarget } from "./child-targets.js";
import { CommitGate, type Paused } from "./commit-gate.js";
import { NEW_TAB_POST_REFUSED, NewTabGuard } from "./new-tab-guard.js";
import { refusalNotice } from "./refusal-response.js";
import { DaemonConnection, type ConnState } from "./connection.js";
import { NavHistory } from "./demonstration-nav.js";
import type { PairingState, SessionView, ToPages, ToWorker } from "./messages.js";
import { sendToTab } from "./messages.js";
import { observeTab } from "./observe-tab.js";
import { handleHook, type HookContext } from "./hook-handler.js";
import { originOf } from "./page-hook.js";
import type { CommitDecided, ServerMessage } from "./protocol.gen.js";
import { SessionViews } from "./session-views.js";
import { loadSettings, saveSettings, type Settings } from "./settings.js";
import { TabSessions } from "./tab-sessions.js";
import type { BindingCalled } from "./websocket-hold.js";

const sessions = new TabSessions();
const views = new SessionViews();
let settings: Settings;
let conn: DaemonConnection | null = null;
let connState: ConnState = "disconnected";
let connDetail: string | null = null;
/** Why this browser is not paired though it was (its credential was refused), for its pages. */
let pairingNote: string | null = null;
/** The last AX-tree text sent per tab, so `score` re-sends `observe` only when the page changed. */
const lastSent = new Map<number, string>();

/** Whether this browser holds commits: it carries a person's pairing (while the connection is
 * down, a request that commits fails closed rather than going unasked). */
const holding = () => Boolean(settings?.approver);

const gate = new CommitGate({
  session: (tabId) => sessions.get(tabId),
  holding,
  connection: () => conn,
  trigger: (sessionId) => views.lastDecided(sessionId),
  decided: (_tabId, answer) => commitDecided(answer),
});
/** POST navigations into tabs not held yet are blocked while any tab is held (new-tab-guard.ts). */
const newTabs = new NewTabGuard();
const heldTabs = () => sessions.tabs().filter((tab) => gate.holds(tab));
sessions.onChange = async (tabId) => {
  await newTabs.holding(heldTabs()); // before the tab is held: what it opens is guarded
  await gate.sync(tabId);
};
onDetached((tabId) => gate.detached(tabId));

chrome.debugger.onEvent.addListener((source, method, params) => {
  if (method === "Page.downloadWillBegin" && source.tabId !== undefined) gate.downloadBegun(source.tabId, (params as { url: string }).url);
  if (source.tabId === undefined) return;
  const tabId = source.tabId;
  // a frame or worker the held tab starts: held before it runs (it waits for us meanwhile)
  if (method === "Target.attachedToTarget") void ready.then(() => gate.attached(tabId, params as unknown as AttachedTarget)).catch((err) => console.warn("webshepherd: a child target's hold", err));
  if (method === "Target.detachedFromTarget") gate.childDetached((params as { sessionId: string }).sessionId);
  // a held page's WebSocket message (websocket-hold.ts): sent only once approved
  if (method === "Runtime.bindingCalled" && !(source as { sessionId?: string }).sessionId) void ready.then(() => gate.socketAsked(tabId, params as unknown as BindingCalled)).catch((err) => console.warn("webshepherd: a WebSocket message's hold", err));
  if (method !== "Fetch.requestPaused") return;
  const paused = params as unknown as Paused;
  const child = (source as { sessionId?: string }).sessionId; // paused in a frame's or worker's session
  gate.noted(tabId, paused.requestId, child); // at once: a hold that ends fails it rather than let it go
  void ready.then(() => gate.paused(tabId, paused, child));
});

// a tab a held tab opens (target=_blank, window.open) is held as its opener's session at once
function opened(tabId: number | undefined, openerTabId: number | undefined) {
  if (tabId === undefined) return;
  if (openerTabId !== undefined) openers.set(tabId, openerTabId);
  const held = ready
    .then(() => gate.opened(tabId, openerTabId))
    .catch((err) => console.warn("webshepherd: an opened tab's hold", err))
    .then(() => newTabs.settle(tabId)); // held now (its next requests), or its opener is not held
  adopting.set(tabId, held);
}
/** Which tab opened each tab, and its hold being set up (for its blocked first navigation). */
const openers = new Map<number, number>();
const adopting = new Map<number, Promise<void>>();
chrome.tabs.onCreated.addListener((tab) => {
  if (tab.id !== undefined) newTabs.created(tab.id, tab.openerTabId !== undefined && gate.holds(tab.openerTabId));
});
// a new tab's first navigation the rule blocked: a GET goes again once the tab is held (and is
// held then); a POST is refused, and the page that opened it is told why
chrome.webRequest.onErrorOccurred.addListener(
  (d) => {
    const opener = openers.get(d.tabId);
    if (opener === undefined || !d.error.includes("ERR_BLOCKED_BY_CLIENT")) return;
    openers.delete(d.tabId); // its first navigation only (never a loop with another blocker)
    if (d.method === "GET") {
      // (the browser's own navigation: the rule, which blocks only pages' navigations, lets it go)
      void (adopting.get(d.tabId) ?? ready).then(() => chrome.tabs.update(d.tabId, { url: d.url })).catch(() => undefined);
      return;
    }
    const decision = { status: "rejected" as const, by: "webshepherd extension", note: NEW_TAB_POST_REFUSED };
    sendToTab(opener, { kind: "refused", text: refusalNotice({ method: d.method, url: d.url, kind: "write" }, decision) });
  },
  { urls: ["<all_urls>"], types: ["main_frame"] },
);
// (the browser's own word: tabs.onCreated's openerTabId names the tab active then, for any new tab)
chrome.webNavigation.onCreatedNavigationTarget.addListener((d) => opened(d.tabId, d.sourceTabId));

// every download waits here, its file not named yet, until the gate lets it be saved
chrome.downloads.onDeterminingFilename.addListener((item, suggest) => {
  void ready
    .then(() => gate.download(item, () => suggest()))
    .catch((err) => {
      console.warn("webshepherd: a download failed closed", err);
      return chrome.downloads.cancel(item.id);
    });
  return true; // suggest comes later
});

/** Every followed tab's hold (and the tabs they opened) as the pairing says now. */
function syncHolds() {
  void newTabs.holding(heldTabs());
  for (const tab of new Set([...sessions.tabs(), ...gate.adoptedTabs()])) void gate.sync(tab).catch((err) => console.warn("webshepherd: commit hold", err));
}

/** A paused request decided (our own check's reply, or an event of another client's). */
function commitDecided(answer: CommitDecided) {
  pushView(views.commitDecided(answer));
  approvalsChanged();
}
function refreshBadge(detail: string | undefined = connDetail ?? undefined) {
  void showBadge(views.pendingApprovals() > 0 && connState === "connected" ? "approval" : connState, detail);
}

function pushView(view: SessionView | null) {
  if (!view) return;
  for (const tab of sessions.tabsOf(view.sessionId)) sendToTab(tab, { kind: "view", view, origin: sessions.get(tab)?.origin });
}

/** Tells the extension's own pages (side panel, popup) that the pending approvals changed. */
function approvalsChanged() {
  const msg: ToPages = { kind: "approvals.changed" };
  chrome.runtime.sendMessage(msg).catch(() => undefined); // no page open: nobody to tell
}

/** A message from one of the extension's own pages (side panel, popup, options), which no web page can script. */
function fromOwnPage(sender: chrome.runtime.MessageSender): boolean {
  return sender.id === chrome.runtime.id && typeof sender.url === "string" && sender.url.startsWith(chrome.runtime.getURL(""));
}

function onEvent(msg: ServerMessage) {
  switch (msg.type) {
    case "observed":
      if (msg.session_id && sessions.tabsOf(msg.session_id).length > 0) {
        pushView(views.observed(msg.session_id, msg.step, msg.url ?? null, msg.axtree ?? null));
      }
      break;
    case "mode.set":
      pushView(views.mode(msg.session_id, msg.mode));
      approvalsChanged();
      break;
    case "commit.decided":
      if (sessions.tabsOf(msg.session_id).length > 0) commitDecided(msg);
      break;
    case "checklist":
      pushView(views.checklist(msg.session_id, msg.items));
      break;
    case "score.progress": {
      const text = views.progress(msg.session_id, msg.candidate, msg.sample, msg.delta);
      if (text === null) break;
      for (const tab of sessions.tabsOf(msg.session_id)) {
        sendToTab(tab, { kind: "progress", candidate: msg.candidate, text, origin: sessions.get(tab)?.origin });
      }
      break;
    }
    case "scored":
      if (sessions.tabsOf(msg.session_id).length > 0) pushView(views.scored(msg, undefined));
      break;
    case "approval.request":
      if (sessions.tabsOf(msg.session_id).length === 0) break; // a session of another browser
      pushView(views.approval(msg));
      refreshBadge();
      approvalsChanged();
      break;
    case "approval.resolved": {
      const view = views.resolved(msg.request_id);
      if (view) {
        for (const tab of sessions.tabsOf(view.sessionId)) {
          sendToTab(tab, { kind: "approval.resolved", requestId: msg.request_id, decision: msg.decision, by: msg.by ?? null });
        }
        pushView(view);
      }
      refreshBadge();
      approvalsChanged();
      break;
    }
    case "signal":
      if (sessions.tabsOf(msg.session_id).length > 0) pushView(views.signal(msg));
      break;
    case "tree.node":
      if (sessions.tabsOf(msg.session_id).length > 0) pushView(views.treeNode(msg));
      break;
    default:
      break;
  }
}

async function resubscribe() {
  const ids = sessions.sessionIds();
  if (!conn || ids.length === 0) return;
  await conn.request({ type: "subscribe", sessions: ids }).catch(() => undefined);
  // the followed sessions' modes (the side panel's control)
  const listed = await conn.request({ type: "sessions.list", limit: 1000 }).catch(() => null);
  if (listed?.type !== "sessions") return;
  for (const summary of listed.sessions) if (ids.includes(summary.session_id)) pushView(views.mode(summary.session_id, summary.mode));
  approvalsChanged();
}

/** The connection the page hook uses: a session it starts says this browser holds its
 * commits (while paired), and the started session's mode is noted. */
function hookConnection(): DaemonConnection | null {
  const c = conn;
  if (!c) return null;
  const wrapped = Object.create(c) as DaemonConnection;
  const request = async (msg: Parameters<DaemonConnection["request"]>[0], timeoutMs?: number) => {
    const out = msg.type === "session.start" && holding() ? { ...msg, holds: "browser" as const } : msg;
    const reply = await c.request(out, timeoutMs);
    if (reply.type === "session.started") views.mode(reply.session_id, reply.mode);
    return reply;
  };
  wrapped.request = request as DaemonConnection["request"];
  return wrapped;
}

function connect() {
  conn?.stop();
  conn = new DaemonConnection({
    url: settings.url,
    token: settings.token,
    approver: () => settings.approver,
    version: chrome.runtime.getManifest().version,
    onEvent,
    onState: (state, detail) => {
      connState = state;
      connDetail = detail ?? null;
      refreshBadge(detail);
      if (state === "unauthorized" && settings.approver && detail?.includes("approver credential")) {
        // revoked (or from another daemon): forget it, say so, and reconnect unpaired
        pairingNote = `The daemon refused this browser's pairing (${detail}).`;
        void saveSettings({ approver: "", approverName: "" });
      }
      approvalsChanged();
    },
    onOpen: () => {
      void resubscribe();
      // resume: the tabs we follow get a fresh observation of where they are now
      for (const id of sessions.sessionIds()) for (const tab of sessions.tabsOf(id)) void sendObserve(tab);
    },
  });
  conn.start();
}

async function sendObserve(tabId: number, force = false): Promise<number | null> {
  const s = sessions.get(tabId);
  if (!s || !conn || conn.state !== "connected") return null;
  const { observation } = await observeTab(tabId, settings.flags);
  if (!force && lastSent.get(tabId) === observation.axtree) return null;
  const reply = await conn.request({ type: "observe", session_id: s.sessionId, ...observation });
  lastSent.set(tabId, observation.axtree);
  if (reply.type !== "observed") return null;
  // a new page: what was scored on the old one goes from the overlay before anything new is drawn
  pushView(views.observed(s.sessionId, reply.step, observation.url, observation.axtree));
  return reply.step;
}

// -- demonstrations: the person's own actions, recorded with source "human" --------------

/** Per demonstrated tab: its work in order (an action goes after the observation it was taken on). */
const demonstrationChains = new Map<number, Promise<unknown>>();
const demonstrationNav = new Map<number, NavHistory>();

function inDemonstrationOrder(tabId: number, fn: () => Promise<unknown>): Promise<unknown> {
  const next = (demonstrationChains.get(tabId) ?? Promise.resolve()).then(fn).catch((err) => console.warn("webshepherd: demonstration", err));
  demonstrationChains.set(tabId, next);
  return next;
}

function isDemonstration(tabId: number): boolean {
  return sessions.get(tabId)?.demonstration === true;
}

function recordHumanAction(tabId: number, action: string, observeAfter = true) {
  return inDemonstrationOrder(tabId, async () => {
    const s = sessions.get(tabId);
    if (!s?.demonstration || !conn || conn.state !== "connected") return;
    await conn.request({ type: "action", session_id: s.sessionId, action, thought: null, source: "human" });
    // the observation the next action is taken on (sent only when the page changed)
    if (observeAfter) await sendObserve(tabId).catch(() => undefined);
  });
}

async function startDemonstration(tabId: number, intent: string): Promise<string> {
  if (!conn || conn.state !== "connected") throw new Error("not connected to the daemon");
  if (intent.trim() === "") throw new Error("an instruction is required");
  if (sessions.get(tabId)) throw new Error("this tab already follows a session");
  const tab = await chrome.tabs.get(tabId);
  const { observation } = await observeTab(tabId, settings.flags);
  const started = await conn.request({
    type: "session.start",
    intent,
    start_url: tab.url ?? "",
    checklist: null,
    observation,
    agent: { name: "person", planning: "step" },
    source: "human",
  });
  if (started.type !== "session.started") throw new Error(`unexpected ${started.type}`);
  lastSent.set(tabId, observation.axtree);
  const nav = new NavHistory();
  nav.start(tab.url ?? "");
  demonstrationNav.set(tabId, nav);
  await sessions.set(tabId, { sessionId: started.session_id, intent, demonstration: true, step: 0 });
  views.ensure(started.session_id, intent);
  await resubscribe();
  sendToTab(tabId, { kind: "demonstration", on: true });
  return started.session_id;
}

async function stopDemonstration(tabId: number, outcome: "success" | "failure" | "unknown") {
  const s = sessions.get(tabId);
  if (!s?.demonstration) throw new Error("no demonstration in this tab");
  sendToTab(tabId, { kind: "demonstration", on: false });
  await inDemonstrationOrder(tabId, async () => undefined); // the actions already under way go first
  if (!conn || conn.state !== "connected") throw new Error("not connected to the daemon");
  await conn.request({ type: "session.end", session_id: s.sessionId, outcome, answer: null });
  await sessions.remove(tabId);
  demonstrationNav.delete(tabId);
  demonstrationChains.delete(tabId);
  lastSent.delete(tabId);
}

// a held tab on another host: the pages the new-tab rule watches follow it
chrome.webNavigation.onCommitted.addListener((d) => {
  if (d.frameId === 0 && gate.holds(d.tabId)) void newTabs.holding(heldTabs());
});

chrome.webNavigation.onCommitted.addListener((details) => {
  if (details.frameId !== 0) return;
  void ready.then(() => {
    if (!isDemonstration(details.tabId)) return;
    let nav = demonstrationNav.get(details.tabId);
    if (!nav) {
      nav = new NavHistory(); // a restarted worker: the history starts here
      demonstrationNav.set(details.tabId, nav);
    }
    const action = nav.commit(details.url, details.transitionType, details.transitionQualifiers);
    if (action) void recordHumanAction(details.tabId, action, false);
  });
});

const hookContext: HookContext = {
  connection: hookConnection,
  sessions,
  views,
  settings: () => settings,
  sendObserve,
  resubscribe,
  pushView,
  forget: (tabId) => lastSent.delete(tabId),
  remember: (tabId, axtree) => lastSent.set(tabId, axtree),
};

const ready = (async () => {
  await sessions.load();
  settings = await loadSettings();
  for (const id of sessions.sessionIds()) views.ensure(id);
  // what the last incarnation of this worker left waiting has no decider now: failed
  await gate.recover().catch((err) => console.warn("webshepherd: paused requests left by a stopped worker", err));
  connect();
  syncHolds();
})();

chrome.storage.onChanged.addListener((changes, area) => {
  if (area !== "local" || !(changes.url || changes.token || changes.flags || changes.pageHook || changes.approver)) return;
  void ready.then(async () => {
    settings = await loadSettings();
    if (changes.approver) syncHolds();
    // a new credential is already in force on this connection (the `paired` reply); one removed is not
    if (changes.url || changes.token || (changes.approver && !settings.approver)) connect();
  });
});

function pairingState(): PairingState {
  const paired = conn?.paired === true;
  return {
    paired,
    name: paired ? settings.approverName || null : null,
    note: paired ? null : pairingNote,
    link: { conn: connState, detail: connDetail, url: settings.url, token: Boolean(settings.token) },
  };
}

/** Pair this browser with a person's one-time code: the credential goes to chrome.storage.local. */
async function pair(code: string): Promise<{ ok: boolean; error?: string }> {
  if (!conn || conn.state !== "connected") return { ok: false, error: "not connected to the daemon: set the URL and token first" };
  try {
    const r = await conn.request({ type: "pair", code, name: "webshepherd-extension" });
    if (r.type !== "paired") return { ok: false, error: `unexpected ${r.type}` };
    await saveSettings({ approver: r.credential, approverName: r.name });
    settings = { ...settings, approver: r.credential, approverName: r.name };
    conn.paired = true;
    pairingNote = null;
    approvalsChanged();
    return { ok: true };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}

chrome.runtime.onMessage.addListener((msg: ToWorker, sender, sendResponse) => {
  const tabId = sender.tab?.id;
  void ready
    .then(async () => {
      const origin = sender.origin ?? originOf(sender.url);
      if (msg.kind === "hook") {
        if (tabId === undefined || sender.frameId !== 0 || fromOwnPage(sender)) return sendResponse(null);
        return sendResponse(await handleHook(hookContext, { tabId, url: sender.tab?.url ?? "", origin }, msg.request));
      }
      if (msg.kind === "tab.state") {
        const s = tabId === undefined ? undefined : sessions.get(tabId);
        const shown = s && (s.origin === undefined || s.origin === origin) ? s : undefined; // a hook session only on its origin
        return sendResponse({ session: shown ?? null, view: shown ? views.get(shown.sessionId) : null, hook: settings.pageHook });
      }
      if (msg.kind === "approvals.list") {
        return sendResponse(fromOwnPage(sender) ? views.pending() : []);
      }
      if (msg.kind === "sessions.modes") {
        return sendResponse(fromOwnPage(sender) ? views.modes(sessions.sessionIds()) : []);
      }
      if (msg.kind === "commits.recent") {
        return sendResponse(fromOwnPage(sender) ? views.recentCommits() : []);
      }
      if (msg.kind === "session.mode") {
        // only a person sets a mode: the side panel is an extension page no web page can script
        if (!fromOwnPage(sender)) return sendResponse({ ok: false, error: "a session's mode is set only in the extension's side panel" });
        if (!conn || conn.state !== "connected") return sendResponse({ ok: false, error: "not connected to the daemon" });
        if (!["ask", "watch", "stop"].includes(msg.mode)) return sendResponse({ ok: false, error: `mode: one of ask, watch, stop (got ${String(msg.mode)})` });
        try {
          const set = await conn.request({ type: "session.mode", session_id: msg.sessionId, mode: msg.mode });
          if (set.type === "mode.set") onEvent(set); // our own change comes back as a reply
          return sendResponse({ ok: true });
        } catch (err) {
          return sendResponse({ ok: false, error: (err as Error).message });
        }
      }
      if (msg.kind === "pairing.state") {
        return sendResponse(fromOwnPage(sender) ? pairingState() : { paired: false, name: null, note: null, link: { conn: "disconnected", detail: null, url: "", token: false } });
      }
      if (msg.kind === "pair") {
        if (!fromOwnPage(sender)) return sendResponse({ ok: false, error: "pairing happens only in the extension's options page" });
        return sendResponse(await pair(String(msg.code)));
      }
      if (msg.kind === "demonstration.action") {
        if (tabId !== undefined && isDemonstration(tabId)) void recordHumanAction(tabId, msg.action);
        return sendResponse({ ok: true });
      }
      if (msg.kind === "demonstration.state") {
        return sendResponse({ connected: conn?.state === "connected", session: sessions.get(msg.tabId) ?? null });
      }
      if (msg.kind === "demonstration.start" || msg.kind === "demonstration.stop") {
        if (!fromOwnPage(sender)) return sendResponse({ ok: false, error: "demonstrations start and stop in the popup" });
        try {
          if (msg.kind === "demonstration.start") return sendResponse({ ok: true, sessionId: await startDemonstration(msg.tabId, msg.intent) });
          await stopDemonstration(msg.tabId, msg.outcome);
          return sendResponse({ ok: true });
        } catch (err) {
          return sendResponse({ ok: false, error: (err as Error).message });
        }
      }
      if (msg.kind === "approval.decide") {
        // only a person decides: the side panel and popup are extension pages no web page can script
        if (!fromOwnPage(sender)) return sendResponse({ ok: false, error: "decisions are taken only in the extension's side panel or popup" });
        if (!conn) return sendResponse({ ok: false, error: "not connected" });
        try {
          const resolved = await conn.request({
            type: "approval.decide",
            request_id: msg.requestId,
            decision: msg.decision,
            action: msg.decision === "edit" ? msg.action : null,
            via: msg.via === "popup" ? "popup" : "panel",
            allow_origin: msg.decision === "approve" && msg.allowOrigin === true,
          });
          onEvent(resolved); // our own decision comes back as a reply, not as an event
          return sendResponse({ ok: true });
        } catch (err) {
          return sendResponse({ ok: false, error: String(err) });
        }
      }
      return sendResponse(null);
    })
    .catch((err) => sendResponse({ ok: false, error: String(err) }));
  return true;
});

chrome.webNavigation.onCompleted.addListener((details) => {
  if (details.frameId !== 0) return;
  void ready.then(() => {
    if (isDemonstration(details.tabId)) return inDemonstrationOrder(details.tabId, () => sendObserve(details.tabId));
    return sendObserve(details.tabId).catch(() => undefined);
  });
});

chrome.tabs.onRemoved.addListener((tabId) => {
  void ready.then(async () => {
    lastSent.delete(tabId);
    newTabs.removed(tabId);
    openers.delete(tabId);
    adopting.delete(tabId);
    demonstrationNav.delete(tabId);
    demonstrationChains.delete(tabId);
    await sessions.remove(tabId);
    await detachTab(tabId);
  });
});

/** For `webshepherd observe` and the tests: the exact text the daemon would receive for a tab. */
async function captureTab(tabId: number, flags?: Settings["flags"]) {
  await ready;
  const { observation, capture } = await observeTab(tabId, flags ?? settings.flags, false);
  return {
    url: observation.url,
    axtree: observation.axtree,
    elements: observation.elements,
    warnings: capture.warnings,
    timing: capture.timing,
  };
}

async function captureUrl(urlPrefix: string, flags?: Settings["flags"]) {
  const tabs = await chrome.tabs.query({});
  const tab = tabs.find((t) => t.url?.startsWith(urlPrefix));
  if (tab?.id === undefined) throw new Error(`no tab shows ${urlPrefix}`);
  return captureTab(tab.id, flags);
}

Object.assign(globalThis, {
  webshepherd: {
    captureTab,
    captureUrl,
    state: () => ({ conn: connState, sessions: sessions.sessionIds() }),
    /** The paused requests decided lately, newest last (the browser demo waits on them). */
    recentCommits: () => views.recentCommits(),
    /** The paused requests waiting for a decision: id, method, URL (the browser demo waits on them). */
    pendingCommits: () =>
      views
        .pending()
        .filter((p) => p.request.reason === "commit")
        .map((p) => ({ id: p.request.request_id, method: p.request.card?.request?.method ?? "", url: p.request.card?.request?.url ?? "" })),
    /** Resolves once a demonstrated tab's recorded actions and observations have gone out. */
    demonstrationIdle: async (tabId: number) => {
      for (let p = demonstrationChains.get(tabId); p; p = demonstrationChains.get(tabId) === p ? undefined : demonstrationChains.get(tabId)) await p;
    },
  },
});
