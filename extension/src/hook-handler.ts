/**
 * Answers page-hook requests for one tab (the contract: page-hook.ts). Returns null, and the
 * page gets no reply, while the hook is off.
 */
import type { DaemonConnection } from "./connection.js";
import type { SessionView } from "./messages.js";
import { observeTab } from "./observe-tab.js";
import { CHANNEL, hookError, hookKey, keyDigest, requestDigest, signReply, type HookReply, type HookRequest } from "./page-hook.js";
import type { Candidate } from "./protocol.gen.js";
import type { SessionViews } from "./session-views.js";
import type { Settings } from "./settings.js";
import type { TabSession, TabSessions } from "./tab-sessions.js";

export interface HookContext {
  connection: () => DaemonConnection | null;
  sessions: TabSessions;
  views: SessionViews;
  settings: () => Settings;
  sendObserve: (tabId: number, force?: boolean) => Promise<number | null>;
  resubscribe: () => Promise<void>;
  pushView: (view: SessionView | null) => void;
  forget: (tabId: number) => void;
  remember: (tabId: number, axtree: string) => void;
}

/** Where a request comes from: the tab, its URL and the origin of the page that sent it. */
export interface HookSender {
  tabId: number;
  url: string;
  origin: string;
}

const NEEDS_SESSION = new Set(["observe", "score", "action", "session.end"]);
const NO_SESSION = "this tab has no session for this key and origin: send session.start or attach (with the agent's key) first";

function reply(id: string, type: string, body: Record<string, unknown>): HookReply {
  return { ...body, channel: CHANNEL, dir: "reply", id, type };
}

/** The tab's session if `digest` is its key's and the page is on its origin. */
function boundSession(s: TabSession | undefined, digest: string | null, origin: string): TabSession | undefined {
  return s && digest !== null && s.keyDigest === digest && s.origin === origin ? s : undefined;
}

/** The reply key of the request's key, once known (a bound session's, or a redeemed key's). */
interface Signing {
  replyKey: string | null;
}

async function redeem(conn: DaemonConnection, key: string, signing: Signing): Promise<string | null> {
  const r = await conn.request({ type: "hook.redeem", key });
  if (r.type !== "hook.redeemed") throw new Error(`unexpected ${r.type}`);
  signing.replyKey = r.reply_key ?? null;
  return r.session_id ?? null;
}

/** Answers one request, signed (page-hook.ts) once its key's reply key is known, naming the request it answers. */
export async function handleHook(ctx: HookContext, from: HookSender, req: HookRequest): Promise<HookReply | null> {
  const digest = await requestDigest(req); // before answering: the request as it came
  const signing: Signing = { replyKey: null };
  const r = await answer(ctx, from, req, signing);
  return r !== null && signing.replyKey ? signReply({ ...r, request_digest: digest }, signing.replyKey) : r;
}

async function answer(ctx: HookContext, from: HookSender, req: HookRequest, signing: Signing): Promise<HookReply | null> {
  if (!ctx.settings().pageHook) return null;
  const { tabId, url: tabUrl, origin } = from;
  const conn = ctx.connection();
  const key = hookKey(req);
  const digest = key === null ? null : await keyDigest(key);
  const current = ctx.sessions.get(tabId);
  const session = boundSession(current, digest, origin);
  if (current && digest !== null && current.keyDigest === digest) signing.replyKey = current.replyKey ?? null;
  if (req.type === "status") {
    return reply(req.id, "status", { connected: conn?.state === "connected", session_id: session?.sessionId ?? null });
  }
  if (!conn || conn.state !== "connected") return hookError(req.id, "disconnected", "the extension is not connected to the daemon");
  if (key === null) return hookError(req.id, "unauthorized", "key: every page-hook request carries the key the agent got from the daemon (hook.grant)");
  if (NEEDS_SESSION.has(req.type) && !session) {
    const elsewhere = current && current.keyDigest === digest;
    return hookError(req.id, "no_session", elsewhere ? `this session belongs to ${current.origin}: attach again with the key to follow it on ${origin}` : NO_SESSION);
  }
  if ((req.type === "session.start" || req.type === "attach") && origin === "null") {
    return hookError(req.id, "invalid_message", "the page hook needs a page with an origin (not about:blank or data:)");
  }
  try {
    switch (req.type) {
      case "session.start": {
        if (typeof req.intent !== "string" || req.intent.trim() === "") return hookError(req.id, "invalid_message", "intent: a non-empty string is required");
        if ((await redeem(conn, key, signing)) !== null) return hookError(req.id, "invalid_message", "key: this key follows a session: send attach");
        const { observation } = await observeTab(tabId, ctx.settings().flags);
        const started = await conn.request({
          type: "session.start",
          intent: req.intent,
          start_url: typeof req.start_url === "string" ? req.start_url : tabUrl,
          checklist: typeof req.checklist === "string" ? req.checklist : null,
          observation,
          agent: { name: typeof req.agent === "string" ? req.agent : "page-hook", planning: "step" },
          source: "agent",
        });
        if (started.type !== "session.started") throw new Error(`unexpected ${started.type}`);
        ctx.remember(tabId, observation.axtree);
        await ctx.sessions.set(tabId, { sessionId: started.session_id, intent: req.intent, demonstration: false, step: 0, origin, keyDigest: digest!, replyKey: signing.replyKey ?? undefined, commits: started.commits ?? undefined });
        ctx.views.ensure(started.session_id, req.intent);
        await ctx.resubscribe();
        ctx.pushView(ctx.views.get(started.session_id));
        return reply(req.id, "session.started", { session_id: started.session_id });
      }
      case "attach": {
        // the same key again in this tab (the agent re-attaches on a new origin), or one the daemon names a session for
        const sessionId = current && current.keyDigest === digest ? current.sessionId : await redeem(conn, key, signing);
        if (sessionId === null) return hookError(req.id, "invalid_message", "key: this key starts a session: send session.start");
        if (req.session_id !== undefined && req.session_id !== sessionId) return hookError(req.id, "invalid_message", "session_id: not the session of this key");
        await ctx.sessions.set(tabId, { sessionId, intent: "", demonstration: false, step: 0, origin, keyDigest: digest!, replyKey: signing.replyKey ?? undefined, commits: ctx.sessions.tabsOf(sessionId).map((t) => ctx.sessions.get(t)?.commits).find((c) => c !== undefined) });
        ctx.views.ensure(sessionId);
        ctx.forget(tabId);
        await ctx.resubscribe();
        const step = await ctx.sendObserve(tabId, true);
        ctx.pushView(ctx.views.get(sessionId));
        return reply(req.id, "attached", { session_id: sessionId, step });
      }
      case "observe": {
        const step = await ctx.sendObserve(tabId, true);
        return reply(req.id, "observed", { step });
      }
      case "score": {
        const candidates = req.candidates as Candidate[];
        await ctx.sendObserve(tabId); // only when the page changed since the last one
        const scored = await conn.request({
          type: "score",
          session_id: session!.sessionId,
          candidates: candidates as [Candidate, ...Candidate[]],
          samples: typeof req.samples === "number" ? req.samples : null,
          approval: (req.approval as "auto" | "always" | "never" | undefined) ?? "auto",
        });
        if (scored.type !== "scored") throw new Error(`unexpected ${scored.type}`);
        ctx.pushView(ctx.views.scored(scored, candidates));
        const { id: _id, type: _type, ...body } = scored;
        return reply(req.id, "scored", body);
      }
      case "action": {
        const done = await conn.request({
          type: "action",
          session_id: session!.sessionId,
          action: String(req.action ?? ""),
          thought: typeof req.thought === "string" ? req.thought : null,
          source: "agent",
        });
        return reply(req.id, "action.recorded", { step: done.type === "action.recorded" ? done.step : null });
      }
      case "session.end": {
        const outcome = (req.outcome as "success" | "failure" | "unknown" | undefined) ?? "unknown";
        await conn.request({ type: "session.end", session_id: session!.sessionId, outcome, answer: typeof req.answer === "string" ? req.answer : null });
        await ctx.sessions.remove(tabId);
        ctx.forget(tabId);
        return reply(req.id, "session.ended", { session_id: session!.sessionId, outcome });
      }
      default:
        return hookError(req.id, "invalid_message", `unknown request ${String(req.type)}`);
    }
  } catch (err) {
    const e = err as Error & { code?: string };
    return hookError(req.id, e.code ?? "failed", e.message);
  }
}
