"""The socket layer, transport only: a websockets server that reads frames, checks who sends
them, feeds the session machine and hands its effects to the executor (executor.py); the
read-only queries are queries.py's, a connection's rights access.py's.

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
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from typing_extensions import assert_never
from webshepherd.daemon.config import DaemonConfig, allowed_hosts, check_bind, is_loopback
from webshepherd.daemon.engine.api import EngineAPI
from webshepherd.daemon.recorder import History, Recorder
from webshepherd.daemon.server.access import Access
from webshepherd.daemon.server.approvers import Approvers
from webshepherd.daemon.server.engine_runner import EngineRunner
from webshepherd.daemon.server.executor import Executor
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
from webshepherd.daemon.server.queries import Queries
from webshepherd.daemon.server.quotas import Quotas
from webshepherd.daemon.server.scheduler import Scheduler
from webshepherd.daemon.server.stats import StatsCollector
from webshepherd.daemon.sessions import (
    Scorer,
    SessionCore,
)
from webshepherd.daemon.sessions.approvals import ApprovalPolicy
from webshepherd.daemon.sessions.hook_grants import HookGrants
from webshepherd.protocol import requests as rq
from webshepherd.protocol.common import DaemonInfo
from webshepherd.protocol.errors import (
    ErrorCode,
    OverloadedError,
    ProtocolError,
    UnauthorizedError,
    WebShepherdError,
)
from webshepherd.protocol.replies import (
    Error,
    Pong,
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
            commit_patterns=config.commits,
        )
        self.hub = Hub()
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
        self.runner: EngineRunner | None = None  # made by start(), with the scheduler
        self._stopped = asyncio.Event()
        self.port = config.port
        self.offload = Offload()  # big frames parsed, big events serialised in a process
        self.effects = Executor(self.core, self.hub, self.quotas, self.offload, self._spawn)
        self.queries = Queries(self.core, config.max_frame_bytes)
        self.access = Access(self.core, self.approvers, self.hook_grants, self._load, self._error)

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
            self.effects.telemetry = self.telemetry
            log.info("exporting sessions as OTLP/HTTP traces to %s", self.telemetry.url)
        self.recorder = Recorder(cfg.db_path)
        self.history = History(self.recorder)
        self.effects.recorder, self.queries.history = self.recorder, self.history
        self.core.approvals.continue_after(self.history.approval_ids())  # never an id twice
        orphaned = self.history.open_approvals()
        if orphaned:
            log.info("closing %d approval request(s) a restart left open", len(orphaned))
            await self.effects.apply(self.core.close_orphaned_approvals(orphaned))
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
            step=self.effects.step,
            report_error=self._error,
        )
        self.effects.runner = self.runner
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
        self._spawn(None, self.effects.evict_loop(cfg.idle_evict_s))
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
        self.effects.cancel_timers()
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
        tool = (approver.role, approver.label) if approver is not None else None
        self.core.connections.opened(conn.id, person=approver is not None, tool=tool)
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
        self.core.connections.closed(conn.id)
        for sid in self.core.asked_by(conn.id):  # its paused requests: refused, cards closed
            self._spawn(None, self._asker_gone(conn.id, sid))
        self.quotas.forget_connection(conn.id)
        conn.closed = True
        if self.scheduler is not None:
            n = self.scheduler.cancel_connection(conn.id)
            if n:
                log.info("connection %d left; cancelled %d engine job(s)", conn.id, n)
        for t in self._tasks.pop(conn.id, set()):
            t.cancel()
        self._spawn(None, conn.stop())

    async def _asker_gone(self, conn_id: int, session_id: str) -> None:
        try:
            await self.effects.step(session_id, lambda: self.core.asker_gone(conn_id, session_id))
        except Exception:
            log.exception("closing connection %d's paused requests failed", conn_id)

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

    async def _load(self, session_id: str, conn: Conn | None = None) -> None:
        """Load a recorded session into the machine (after a restart or an eviction) the
        first time it is addressed, held by ``conn``."""
        if self.core.has(session_id) or self.history is None:
            return
        stored = self.history.stored_session(session_id)
        if stored is not None:
            signals = list(self.history.signal_history(session_id))
            owner = conn.id if conn is not None else None
            await self.effects.apply(self.core.adopt(stored, signals, owner))

    async def _dispatch(self, conn: Conn, msg: ClientMessage) -> None:
        """One request: a session it names is loaded first (after a restart), it is counted
        against the quotas and, when it declares a person's verb, its sender's credential is
        checked; a step of a session goes to the machine whole, the rest by type."""
        core, step = self.core, self.effects.step
        sid = getattr(msg, "session_id", None)
        if isinstance(sid, str) and not isinstance(msg, rq.SessionGet):
            await self._load(sid, conn)
        if not isinstance(msg, rq.Hello):
            await self._admit(conn, msg)
        await self.access.check_person(conn, msg)
        if rq.is_session_request(msg):
            await step(msg.session_id, lambda: core.handle(conn.caller(), msg))
            if isinstance(msg, rq.SessionEnd):
                self.hook_grants.drop_session(msg.session_id)
                self.quotas.forget_session(msg.session_id)
            return
        match msg:
            case rq.Hello():
                raise ProtocolError("hello: already authenticated on this connection")
            case rq.SessionStart():
                await self._start(conn, msg)
            case rq.ApprovalDecide():
                owner = core.approval_session(msg.request_id)
                by = conn.label if msg.via is None else f"{conn.label}/{msg.via}"
                await step(owner, lambda: core.decide(conn.id, by, msg))
            case rq.CommitCheck():
                approver = await self.access.commit_asker(conn, msg.session_id)
                await step(
                    msg.session_id, lambda: core.commit_check(conn.id, msg, approver=approver)
                )
            case rq.Subscribe():
                conn.subscriptions = "*" if msg.sessions == "*" else set(msg.sessions)
                core.connections.subscribed(conn.id, msg.sessions)
                conn.send(dump(Subscribed(id=msg.id, sessions=msg.sessions)), reply=True)
            case rq.SessionsList():
                sessions = self.queries.sessions(msg.limit)
                conn.send(dump(Sessions(id=msg.id, sessions=sessions)), reply=True)
            case rq.SessionGet():  # read and serialised off the loop
                conn.send(await asyncio.to_thread(self.queries.session_get, msg), reply=True)
            case rq.HookGrant():
                await self.access.hook_grant(conn, msg)
            case rq.HookRedeem():
                await self.access.hook_redeem(conn, msg)
            case rq.Pair():
                await self.access.pair(conn, msg)
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
        await self.effects.step(None, lambda: self.core.start(conn.id, msg, checklist))


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
