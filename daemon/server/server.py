"""The socket layer: a websockets server that feeds the session machine and runs its effects.

Security (protocol.md): Origin allowlist and Host check before the WebSocket
opens (HTTP 403), ``hello`` with the token within ``hello_timeout_s`` (else
1008), frames over ``max_frame_bytes`` (over ``PREAUTH_FRAME_BYTES`` before ``hello``)
closed with 1009 by websockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import logging
import signal
import ssl
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from typing_extensions import assert_never
from webshepherd.daemon.config import DaemonConfig, allowed_hosts, check_bind, is_loopback
from webshepherd.daemon.engine.api import EngineAPI
from webshepherd.daemon.recorder import History, Recorder
from webshepherd.daemon.records import EventRecord
from webshepherd.daemon.server.approvers import Approvers
from webshepherd.daemon.server.engine_runner import EngineRunner
from webshepherd.daemon.server.fanout import Conn, Hub
from webshepherd.daemon.server.handshake import (
    CLOSE_POLICY,
    PREAUTH_FRAME_BYTES,
    check_request,
    daemon_version,
    read_hello,
    refuse,
)
from webshepherd.daemon.server.offload import InvalidFrame, Offload
from webshepherd.daemon.server.payloads import PayloadConnection
from webshepherd.daemon.server.quotas import Quotas
from webshepherd.daemon.server.scheduler import Scheduler
from webshepherd.daemon.server.stats import StatsCollector
from webshepherd.daemon.sessions import (
    ApprovalClosed,
    AwaitApproval,
    Effect,
    Publish,
    Record,
    Reply,
    RunChecklist,
    RunScore,
    Scorer,
    SessionCore,
)
from webshepherd.daemon.sessions.approvals import ApprovalPolicy
from webshepherd.daemon.sessions.hook_grants import HookGrants
from webshepherd.daemon.sessions.state import restored
from webshepherd.protocol import requests as rq
from webshepherd.protocol.common import DaemonInfo, SessionSummary
from webshepherd.protocol.errors import (
    ErrorCode,
    OverloadedError,
    ProtocolError,
    SessionClosedError,
    UnauthorizedError,
    UnknownSessionError,
    WebShepherdError,
)
from webshepherd.protocol.replies import (
    Error,
    HookGranted,
    HookRedeemed,
    Paired,
    Pong,
    Session,
    Sessions,
    Subscribed,
    Welcome,
)
from webshepherd.protocol.token_store import TokenStore
from webshepherd.protocol.union import ClientMessage, dump
from webshepherd.protocol.version import PROTOCOL_VERSION
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

__all__ = [
    "CLOSE_POLICY",
    "DaemonServer",
    "EngineAPI",
    "run_daemon",
    "serve_until_signal",
]  # EngineAPI: re-exported


if TYPE_CHECKING:
    from webshepherd.daemon.server.telemetry import OtlpExport

log = logging.getLogger(__name__)

#: How long a connection waits after a wrong pairing code before its next request is read.
PAIR_FAILURE_DELAY_S = 1.0
#: What to do about a missing or refused approver credential.
HOW_TO_PAIR = (
    "a person pairs the tool first: run `webshepherd pair extension` (then enter the code in "
    "the extension's options page) or `webshepherd pair tui` at a terminal"
)


class DaemonServer:
    """The reward daemon: ``await start()``, then ``serve_forever()`` or ``stop()``."""

    def __init__(self, config: DaemonConfig, engine: EngineAPI):
        check_bind(config)
        self.config = config
        self.engine = engine
        self.token = config.token or TokenStore(config.config_dir).get_or_create()
        self.core = SessionCore(
            ApprovalPolicy(config.approval_threshold, config.approval_drop),
            default_samples=config.default_samples,
            approval_timeout_s=config.approval_timeout_s,
            approval_default=config.approval_default,
            guards=config.guards,
            scorer=Scorer(engine.model_id, engine.backend_name, engine.settings),
            mode=config.mode,
            sandbox_origins=config.sandbox_origins,
        )
        self.hub = Hub()
        self.core.person_present = self.hub.people_present  # who can answer an approval
        self.hook_grants = HookGrants()
        self.approvers = Approvers(config.config_dir)  # paired person tools (approvers.py)
        self.quotas = Quotas(config.quotas)  # per connection and per session (quotas.py)
        self.stats = StatsCollector(price_in=config.price_in, price_out=config.price_out)
        self.telemetry: OtlpExport | None = None
        self.recorder: Recorder | None = None
        self.history: History | None = None
        self.scheduler: Scheduler | None = None
        self._server: Server | None = None
        self._hosts: frozenset[str] = frozenset()
        self._ids = itertools.count(1)
        self._tasks: dict[int | None, set[asyncio.Task[None]]] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.runner: EngineRunner | None = None  # made by start(), with the scheduler
        self._stopped = asyncio.Event()
        self.port = config.port
        self.offload = Offload()  # big frames parsed, big events serialised in a process

    def _runner(self) -> EngineRunner:
        if self.runner is None:
            raise RuntimeError("the daemon is not started")
        return self.runner

    @property
    def url(self) -> str:
        scheme = "wss" if self.config.tls else "ws"
        host = f"[{self.config.host}]" if ":" in self.config.host else self.config.host
        return f"{scheme}://{host}:{self.port}{self.config.path}"

    # -- lifecycle -----------------------------------------------------------
    async def start(self) -> None:
        cfg = self.config
        if cfg.otlp_endpoint:
            from webshepherd.daemon.server.telemetry import OtlpExport

            self.telemetry = OtlpExport(
                cfg.otlp_endpoint,
                dict(cfg.otlp_headers),
                queue_size=cfg.otlp_queue_size,
                threshold=cfg.approval_threshold,
            )
            self.telemetry.start()
            log.info("exporting sessions as OTLP/HTTP traces to %s", self.telemetry.url)
        self.recorder = Recorder(cfg.db_path)
        self.history = History(self.recorder)
        orphaned = self.history.open_approvals()
        if orphaned:
            log.info("closing %d approval request(s) a restart left open", len(orphaned))
            await self._apply(self.core.close_orphaned_approvals(orphaned))
        self.scheduler = Scheduler(
            queue_limit=cfg.queue_limit,
            timeout_s=cfg.request_timeout_s,
            batch_sessions=cfg.batch_sessions,
        )
        self.scheduler.start()
        self.runner = EngineRunner(
            engine=self.engine,
            core=self.core,
            hub=self.hub,
            stats=self.stats,
            scheduler=self.scheduler,
            telemetry=self.telemetry,
            stats_interval_s=cfg.stats_interval_s,
            spawn=self._spawn,
            step=self._step,
            report_error=self._error,
        )
        ssl_ctx = None
        if cfg.tls_cert is not None:
            ssl_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ssl_ctx.load_cert_chain(cfg.tls_cert, cfg.tls_key)
        self._server = await serve(
            self._handler,
            cfg.host,
            cfg.port,
            process_request=self._check_request,
            max_size=PREAUTH_FRAME_BYTES,  # the configured limit once hello succeeds
            compression=None,  # inflating a 31 MiB frame would hold the loop for ~50 ms
            create_connection=PayloadConnection,  # big payloads handed over as gathered
            ssl=ssl_ctx,
            ping_interval=20,
            ping_timeout=20,
        )
        self.port = next(iter(self._server.sockets)).getsockname()[1]
        hosts = set(allowed_hosts(self.port))
        if not is_loopback(cfg.host):
            hosts.add(f"{cfg.host}:{self.port}")
        self._hosts = frozenset(hosts)
        self._spawn(None, self._runner().stats_loop())
        self._spawn(None, self._evict_loop())
        log.info(
            "webshepherd daemon listening on %s (model %s, backend %s)",
            self.url,
            self.engine.model_id,
            self.engine.backend_name,
        )

    async def stop(self) -> None:
        self._stopped.set()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)
        for timer in self._timers.values():
            timer.cancel()
        tasks = [t for ts in self._tasks.values() for t in ts]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for conn in list(self.hub.conns.values()):
            await conn.stop()
        if self.scheduler is not None:
            await self.scheduler.stop()
        if self.telemetry is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.telemetry.close)
        if self.history is not None:
            self.history.close()
        if self.recorder is not None:
            self.recorder.close()
        self.offload.close()

    async def serve_forever(self) -> None:
        await self._stopped.wait()

    # -- HTTP checks before the WebSocket opens (handshake.py) ---------------
    def _check_request(self, connection: ServerConnection, request: Request) -> Response | None:
        return check_request(
            connection, request, self.config.path, self.config.allowed_origins, self._hosts
        )

    # -- one connection ------------------------------------------------------
    async def _handler(self, ws: ServerConnection) -> None:
        conn = await self._handshake(ws)
        if conn is None:
            return
        assert isinstance(ws, PayloadConnection)
        ws.gather_big_payloads(self.config.max_frame_bytes)
        try:
            while True:
                raw = await ws.recv_payload()  # bytes: pydantic validates UTF-8 itself
                await self._on_frame(conn, raw)
                if conn.closed:  # the daemon closed it (a policy): read nothing more
                    break
                await conn.room()  # the next request only once the replies are moving
        except ConnectionClosed:
            pass
        finally:
            self._drop(conn)

    async def _handshake(self, ws: ServerConnection) -> Conn | None:
        msg = await read_hello(
            ws, self.config.hello_timeout_s, self.token, self.config.max_frame_bytes
        )
        if msg is None:
            return None
        approver = None
        if msg.approver is not None:  # the role comes from the credential, never from hello
            try:
                approver = await asyncio.to_thread(self.approvers.verify, msg.approver)
            except WebShepherdError as exc:
                await refuse(ws, msg.id, exc)
                return None
            if approver is None:
                await refuse(
                    ws,
                    msg.id,
                    UnauthorizedError(
                        "hello: unknown or revoked approver credential; pair again: "
                        "`webshepherd pair extension` or `webshepherd pair tui`"
                    ),
                )
                return None
        conn = Conn(
            next(self._ids),
            ws,
            msg.client.role,
            msg.client.name,
            self.config.send_queue_size,
            self.config.slow_consumer_s,
            self.config.send_queue_bytes,
            approver=approver,
        )
        self.hub.add(conn)
        info = DaemonInfo(
            version=daemon_version(), model=self.engine.model_id, backend=self.engine.backend_name
        )
        welcome = Welcome(
            id=msg.id,
            protocol=PROTOCOL_VERSION,
            daemon=info,
            role=conn.role,
            approver=approver is not None,
        )
        conn.send(dump(welcome), reply=True)
        return conn

    def _drop(self, conn: Conn) -> None:
        self.hub.remove(conn.id)
        self.quotas.forget_connection(conn.id)
        conn.closed = True
        if self.scheduler is not None:
            n = self.scheduler.cancel_connection(conn.id)
            if n:
                log.info("connection %d left; cancelled %d engine job(s)", conn.id, n)
        for t in self._tasks.pop(conn.id, set()):
            t.cancel()
        self._spawn(None, conn.stop())

    def _spawn(self, owner: int | None, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        bucket = self._tasks.setdefault(owner, set())
        bucket.add(task)
        task.add_done_callback(bucket.discard)

    # -- requests ------------------------------------------------------------
    def _error(self, conn_id: int, rid: str | None, err: BaseException) -> None:
        if isinstance(err, WebShepherdError):
            exc = err
        else:
            log.error("internal error answering %s", rid, exc_info=err)
            exc = WebShepherdError(
                "internal error; the daemon's log has the details", ErrorCode.INTERNAL
            )
        self.hub.send(
            conn_id,
            dump(Error(id=rid, code=exc.code, message=exc.message, retryable=exc.retryable)),
        )

    async def _on_frame(self, conn: Conn, raw: bytes | memoryview) -> None:
        try:
            msg = await self.offload.parse(raw)  # big frames: off the loop (offload.py)
        except InvalidFrame as exc:
            self._error(conn.id, exc.request_id, exc)
            return
        try:
            await self._dispatch(conn, msg)
        except Exception as exc:
            self._error(conn.id, msg.id, exc)

    def _restore(self, session_id: str, conn: Conn | None) -> None:
        """Load a session from the recording (after a restart) the first time it is addressed."""
        if self.core.has(session_id) or self.history is None:
            return
        stored = self.history.stored_session(session_id)
        if stored is not None:
            state = restored(stored, self.config.mode)
            state.owner = conn.id if conn is not None else None
            self.core.restore(state)
            history = self.history.signal_history(session_id)
            self.core.signals.rebuild(session_id, history, state.agent, state.step_progress)
            if not state.ended and state.checklist is None:  # cut off by a restart
                self._runner().checklist(self.core.generate_checklist(state))

    async def _dispatch(self, conn: Conn, msg: ClientMessage) -> None:
        """One request: a session it names is loaded first (after a restart), it is counted
        against the quotas, then handled by its type (every member of the union once)."""
        core = self.core
        sid = getattr(msg, "session_id", None)
        if isinstance(sid, str) and not isinstance(msg, rq.SessionGet):
            self._restore(sid, conn)
        if not isinstance(msg, rq.Hello):
            await self._admit(conn, msg)
        match msg:
            case rq.Hello():
                raise ProtocolError("hello: already authenticated on this connection")
            case rq.SessionStart():
                await self._start(conn, msg)
            case rq.Observe():
                await self._step(msg.session_id, lambda: core.observe(conn.id, msg))
            case rq.Score():
                await self._step(msg.session_id, lambda: core.score(conn.id, msg))
            case rq.ApprovalDecide():
                await self._check_approver(conn, "approval.decide", "decide approvals")
                owner = core.approvals.session_of(msg.request_id)
                by = conn.label if msg.via is None else f"{conn.label}/{msg.via}"
                await self._step(owner, lambda: core.decide(conn.id, by, msg))
            case rq.CommitCheck():
                approver = await self._commit_asker(conn, msg.session_id)
                await self._step(
                    msg.session_id, lambda: core.commit_check(conn.id, msg, approver=approver)
                )
            case rq.SessionMode():
                await self._check_approver(conn, "session.mode", "set a session's mode")
                await self._step(msg.session_id, lambda: core.set_mode(conn.id, conn.label, msg))
            case rq.Action():
                await self._step(msg.session_id, lambda: core.action(conn.id, msg))
            case rq.SessionEnd():
                await self._step(msg.session_id, lambda: core.end(conn.id, msg))
                self.hook_grants.drop_session(msg.session_id)
                self.quotas.forget_session(msg.session_id)
            case rq.Subscribe():
                conn.subscriptions = "*" if msg.sessions == "*" else set(msg.sessions)
                conn.send(dump(Subscribed(id=msg.id, sessions=msg.sessions)), reply=True)
            case rq.SessionsList():
                conn.send(dump(Sessions(id=msg.id, sessions=self._list(msg.limit))), reply=True)
            case rq.SessionGet():  # read and serialised off the loop
                conn.send(await asyncio.to_thread(self._session_get, msg), reply=True)
            case rq.HookGrant():
                self._hook_grant(conn, msg)
            case rq.HookRedeem():
                self._hook_redeem(conn, msg)
            case rq.Label():
                await self._check_labeller(conn, msg)
                await self._step(msg.session_id, lambda: core.label(conn.id, conn.label, msg))
            case rq.TreeNode():
                self._check_agent_holds(conn, msg.session_id, "tree.node")
                await self._step(msg.session_id, lambda: core.tree_node(conn.id, msg))
            case rq.Pair():
                await self._pair(conn, msg)
            case rq.Ping():
                conn.send(dump(Pong(id=msg.id)), reply=True)
            case _:
                assert_never(msg)

    async def _admit(self, conn: Conn, msg: ClientMessage) -> None:
        """Count ``msg`` against its connection's and session's quotas (``overloaded`` past
        one); a session's recorded size is read from the recording the first time."""
        sid = self.quotas.needs_size(msg)
        if sid is not None and self.history is not None:
            history = self.history
            self.quotas.set_recorded(sid, await asyncio.to_thread(history.recorded_size, sid))
        generating = sum(1 for owner in self._runner().generating.values() if owner == conn.id)
        self.quotas.admit(conn.id, msg, model_jobs=self.quotas.jobs(conn.id) + generating)

    async def _start(self, conn: Conn, msg: rq.SessionStart) -> None:
        """A client's checklist is parsed here and recorded with the start; without one the
        generation must find room in the engine's queue, else ``overloaded`` (with the
        request's id) and no session."""
        assert self.scheduler is not None
        checklist = None
        if msg.checklist is not None:
            checklist = self.engine.parse_reference_checklist(msg.checklist)
        elif self.scheduler.full:
            raise OverloadedError(
                f"the engine's queue is full ({self.scheduler.queue_limit} jobs): no session "
                "was started; retry later, or send the checklist with session.start"
            )
        await self._step(None, lambda: self.core.start(conn.id, msg, checklist))

    async def _check_approver(self, conn: Conn, request: str, verb: str) -> None:
        """Raise unless ``conn`` holds an approver credential that is still paired (one
        revoked since its hello no longer decides)."""
        approver = conn.approver
        if approver is None:
            raise UnauthorizedError(
                f"{request}: a connection with role {conn.role!r} may not {verb}: it presented "
                f"no approver credential (a role declared in hello grants nothing); {HOW_TO_PAIR}"
            )
        paired = await asyncio.to_thread(self.approvers.paired)
        if all(a.id != approver.id for a in paired):
            conn.approver = None
            raise UnauthorizedError(
                f"{request}: may not {verb}: this tool's pairing ({approver.label}) was "
                f"revoked; {HOW_TO_PAIR}"
            )

    async def _commit_asker(self, conn: Conn, session_id: str) -> str | None:
        """The approver label of a paired person's tool asking about another connection's
        session's request (still paired), else None (the machine checks the owner)."""
        st = self.core.sessions.get(session_id)
        if conn.approver is None or (st is not None and st.owner == conn.id):
            return None
        await self._check_approver(conn, "commit.check", "ask about another session's request")
        return conn.label

    async def _pair(self, conn: Conn, msg: rq.Pair) -> None:
        """A one-time code from ``webshepherd pair``: a new approver credential, and this
        connection is that approver from now on. A wrong code costs the connection
        :data:`PAIR_FAILURE_DELAY_S` before its next request is read; its last wrong code
        (approvers.MAX_PER_CONNECTION) closes it."""
        try:
            approver, credential = await asyncio.to_thread(
                self.approvers.redeem, msg.code, msg.name
            )
        except WebShepherdError as exc:
            log.warning("connection %d (%s): wrong pairing code", conn.id, conn.label)
            await asyncio.sleep(PAIR_FAILURE_DELAY_S)
            if self.approvers.wrong_code_on(conn.id):
                self._error(conn.id, msg.id, exc)
                await conn.drain()
                why = "too many wrong pairing codes on this connection"
                await conn.ws.close(CLOSE_POLICY, why)
                conn.close(CLOSE_POLICY, why)
                return
            raise
        conn.approver = approver
        log.info("paired %s (id %s) on connection %d", approver.label, approver.id, conn.id)
        reply = Paired(id=msg.id, credential=credential, role=approver.role, name=approver.name)
        conn.send(dump(reply), reply=True)

    async def _check_labeller(self, conn: Conn, msg: rq.Label) -> None:
        """Person labels only from a paired person tool (an approver credential);
        environment labels only from an agent's, for a session no other live connection
        holds."""
        if msg.source == "person":
            await self._check_approver(conn, "label", "label as a person")
            return
        if not conn.is_agent:
            raise UnauthorizedError(
                f"label: source 'environment' comes from an agent's connection, not {conn.who!r}"
            )
        self._check_agent_holds(conn, msg.session_id, "label")

    def _check_agent_holds(self, conn: Conn, session_id: str, what: str) -> None:
        """An agent's connection, for a session no other live connection holds."""
        if not conn.is_agent:
            raise UnauthorizedError(
                f"{what}: only an agent's connection reports this, not {conn.who!r}"
            )
        st = self.core.sessions.get(session_id)
        if st is not None and st.owner not in (None, conn.id) and st.owner in self.hub.conns:
            raise UnauthorizedError(
                f"session_id: session {session_id!r} is held by another connection"
            )

    # -- page-hook keys (hook_grants.py) --------------------------------------
    def _hook_grant(self, conn: Conn, msg: rq.HookGrant) -> None:
        """A key for an agent: for its own session (no other live connection holds it), or
        for one session start through the page hook."""
        if not conn.is_agent:
            raise UnauthorizedError(
                f"hook.grant: only an agent's connection gets page-hook keys, not {conn.who!r}"
            )
        if msg.session_id is not None:
            self._check_live(msg.session_id)
            st = self.core.sessions[msg.session_id]
            if st.owner not in (None, conn.id) and st.owner in self.hub.conns:
                raise UnauthorizedError(
                    f"session_id: session {msg.session_id!r} is held by another connection"
                )
        key = self.hook_grants.grant(msg.session_id)
        reply = HookGranted(
            id=msg.id,
            key=key,
            session_id=msg.session_id,
            expires_in_s=self.hook_grants.ttl_s,
            reply_key=self.hook_grants.reply_key(key),
        )
        conn.send(dump(reply), reply=True)

    def _hook_redeem(self, conn: Conn, msg: rq.HookRedeem) -> None:
        """The extension (paired or not: a browser an agent framework launched redeems too)
        checks a key a page presented; the reply names its session."""
        if conn.declared != "extension" and conn.role != "extension":
            raise UnauthorizedError(
                f"hook.redeem: only the extension redeems page-hook keys, not {conn.declared!r}"
            )
        sid = self.hook_grants.redeem(msg.key)
        if sid is not None:
            try:
                self._check_live(sid)
            except (UnknownSessionError, SessionClosedError):
                self.hook_grants.drop_session(sid)
                raise
        reply = HookRedeemed(
            id=msg.id, session_id=sid, reply_key=self.hook_grants.reply_key(msg.key)
        )
        conn.send(dump(reply), reply=True)

    def _check_live(self, session_id: str) -> None:
        """Raise unless ``session_id`` is a session that has not ended (loaded if evicted)."""
        st = self.core.sessions.get(session_id)
        if st is None and self.history is not None:
            summary = self.history.summary(session_id)
            if summary is not None:
                if summary.state == "ended":
                    raise SessionClosedError(f"session_id: session {session_id!r} has ended")
                self._restore(session_id, None)
                st = self.core.sessions.get(session_id)
        if st is None:
            raise UnknownSessionError(f"session_id: no session {session_id!r}")
        if st.ended:
            raise SessionClosedError(f"session_id: session {session_id!r} has ended")

    def _list(self, limit: int) -> list[SessionSummary]:
        assert self.history is not None
        out = self.history.list_sessions(limit)
        return [
            self.core.sessions[s.session_id].summary() if s.session_id in self.core.sessions else s
            for s in out
        ]

    def _session_get(self, msg: rq.SessionGet) -> str:
        """The ``session`` reply as a frame: as many events from ``after`` on as fit half
        the frame limit (at least one), ``next`` set when more remain."""
        assert self.history is not None
        summary = self.history.summary(msg.session_id)
        if summary is None:
            raise UnknownSessionError(f"session_id: no session {msg.session_id!r}")
        live = self.core.sessions.get(msg.session_id)
        if live is not None:
            summary = live.summary()
        events, more = self.history.page(
            msg.session_id, msg.after, self.config.max_frame_bytes // 2
        )
        reply = Session(
            id=msg.id,
            session=summary,
            checklist=self.history.checklist(msg.session_id),
            events=events,
            next=more,
        )
        return dump(reply)

    # -- effects -------------------------------------------------------------
    async def _step(self, session_id: str | None, make: Callable[[], list[Effect]]) -> None:
        """One state change of a session, kept only once its record is durable: the
        session's steps run one at a time, and a failed write rolls the change back."""
        lock = self._locks.setdefault(session_id or "", asyncio.Lock())
        async with lock:
            undo = self.core.checkpoint(session_id)
            effects = make()
            try:
                await self._apply(effects)
            except BaseException:
                undo()
                raise
        st = self.core.sessions.get(session_id or "")
        if st is not None:
            st.last_active = time.monotonic()

    async def _apply(self, effects: list[Effect]) -> None:
        """Carry out the machine's effects: first every write (its ``Record`` rows and the
        event log of its ``Publish`` events) in one transaction on the recorder's thread;
        only once that is durable the replies, events and engine work, in order. A failed
        write sends nothing and raises (the requester gets ``internal``)."""
        assert self.recorder is not None
        writes: list[Record] = []
        for e in effects:
            if isinstance(e, Record):
                writes.append(e)
            elif isinstance(e, Publish):
                writes.append(EventRecord(e.session_id, e.event))
        if writes:
            await self.recorder.commit(writes)
        for e in effects:
            if isinstance(e, Reply):
                self.hub.send(e.conn, dump(e.message))
            elif isinstance(e, Publish):
                await self._publish(e)
            elif isinstance(e, RunChecklist):
                self._runner().checklist(e)
            elif isinstance(e, RunScore):
                self._spawn(e.conn, self.quotas.counted(e.conn, self._runner().score(e)))
            elif isinstance(e, AwaitApproval):
                loop = asyncio.get_running_loop()
                self._timers[e.request_id] = loop.call_later(
                    e.timeout_s, self._expire, e.request_id
                )
            elif isinstance(e, ApprovalClosed):
                timer = self._timers.pop(e.request_id, None)
                if timer is not None:
                    timer.cancel()

    async def _publish(self, e: Publish) -> None:
        """Serialise the event once, only if someone is to receive it (a big AX tree in the
        offload worker); the session's owner gets it as it gets replies (never dropped),
        others as events."""
        if self.telemetry is not None:
            self.telemetry.offer(e.event)
        st = self.core.sessions.get(e.session_id)
        owner = st.owner if st else None
        targets = list(
            self.hub.targets(e.session_id, owner, to_approvers=e.to_approvers, exclude=e.exclude)
        )
        if not targets:
            return
        axtree = getattr(e.event, "axtree", None)
        frame = await self.offload.dump(e.event, len(axtree) if isinstance(axtree, str) else 0)
        for c in targets:
            c.send(frame, reply=c.id == owner)

    async def _evict_loop(self) -> None:
        """Every so often, forget the sessions nobody touched for ``idle_evict_s`` and that
        have no engine job, no open approval and no step under way."""
        idle = self.config.idle_evict_s
        while True:
            await asyncio.sleep(min(60.0, max(0.05, idle / 4)))
            busy = self._runner().engaged()  # every engine job, queueing to record
            now = time.monotonic()
            for sid, st in list(self.core.sessions.items()):
                lock = self._locks.get(sid)
                if (
                    now - st.last_active >= idle
                    and sid not in busy
                    and not st.waiting_approvals
                    and not (lock is not None and lock.locked())
                ):
                    self.core.evict(sid)
                    self._locks.pop(sid, None)

    def _expire(self, request_id: str) -> None:
        self._timers.pop(request_id, None)
        self._spawn(None, self._expire_now(request_id))

    async def _expire_now(self, request_id: str) -> None:
        try:
            sid = self.core.approvals.session_of(request_id)
            await self._step(sid, lambda: self.core.expire(request_id))
        except Exception:
            log.exception("expiring approval %s failed", request_id)


async def serve_until_signal(server: DaemonServer) -> None:
    """Start ``server`` and serve until SIGINT or SIGTERM, then stop it."""
    await server.start()
    # The model's and libraries' ~400k objects out of the collector's reach: a full
    # collection over them held the loop for ~300 ms here.
    gc.freeze()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, server._stopped.set)
    try:
        await server.serve_forever()
    finally:
        await server.stop()
        log.info("webshepherd daemon stopped")


def run_daemon(config: DaemonConfig, engine: EngineAPI) -> None:
    """Run the daemon until SIGINT or SIGTERM (blocking); ``webshepherd.daemon.build`` builds
    it from Settings (``run_until_signal``), this keeps older callers working."""

    async def main() -> None:
        await serve_until_signal(DaemonServer(config, engine))

    asyncio.run(main())
