"""The async Python client SDK for the webshepherd daemon (protocol v1).

```python
async with AsyncClient() as client:              # token from `webshepherd token`'s store
    session = await client.start_session("Buy the cheapest USB-C cable",
                                         observation=Observation(url=url, axtree=tree))
    scored = await session.score([("The search box is [12].", "fill('12', 'usb-c')"),
                                  ("Maybe the deals page.", "click('40')")])
    print(scored.best, [r.reward for r in scored.results])
```

One background reader task routes replies to the waiting call by ``id`` and
pushes events (messages without ``id``) to subscriptions. Error replies are
raised as the typed exception of their code (``error_from_code``). When the
connection drops, calls in flight fail with :class:`ConnectionLostError`
(``retryable=True``) and, with ``reconnect=True``, the client reconnects with
exponential backoff, says hello again and re-subscribes; calls made meanwhile
wait for the new connection. Events sent while disconnected are lost: catch up
with :meth:`AsyncClient.session`.

Dependencies: websockets and pydantic only (the token store imports keyring
lazily and works without it).

The frames' meaning (ids, routing, typed errors) lives in the sans-I/O
:class:`~.core.ClientCore`; this module is its websockets layer: the socket, the reader
task, the futures of waiting calls, reconnecting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import metadata
from typing import Any, Literal, TypeVar

from pydantic import BaseModel
from webshepherd.protocol.client.core import (
    ChecklistArrived,
    ClientCore,
    Event,
    Failed,
    Outcome,
    Progress,
    Resolved,
)
from webshepherd.protocol.client.session import (
    CandidateLike,
    SessionHandle,
    Subscription,
    to_candidates,
    to_model,
)
from webshepherd.protocol.client.wait import DAEMON_WAIT_S, until_daemon
from webshepherd.protocol.common import (
    AgentInfo,
    ClientInfo,
    CommitMode,
    ElementFacts,
    HeldRequest,
    ItemLabel,
    Observation,
    Role,
    Screenshot,
    SessionSource,
    SessionSummary,
    Source,
    TreeNodeFields,
)
from webshepherd.protocol.errors import (
    ConnectionLostError,
    ErrorCode,
    UnauthorizedError,
    WebShepherdError,
)
from webshepherd.protocol.replies import (
    ActionRecorded,
    ApprovalResolved,
    Checklist,
    CommitDecided,
    HookGranted,
    LabelRecorded,
    ModeSet,
    Observed,
    Paired,
    Pong,
    Scored,
    ScoreProgress,
    Session,
    SessionEnded,
    Sessions,
    SessionStarted,
    Subscribed,
    TreeNodeRecorded,
    Welcome,
)
from webshepherd.protocol.requests import (
    Action,
    ApprovalDecide,
    CommitCheck,
    HookGrant,
    Label,
    Observe,
    Pair,
    Ping,
    Score,
    SessionEnd,
    SessionGet,
    SessionMode,
    SessionsList,
    SessionStart,
    TreeNode,
)
from webshepherd.protocol.token_store import TokenStore
from webshepherd.protocol.union import dump
from webshepherd.protocol.version import MAX_FRAME_BYTES, daemon_url
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, WebSocketException

log = logging.getLogger(__name__)
R = TypeVar("R", bound=BaseModel)
ProgressCallback = Callable[[ScoreProgress], Any]


def client_version() -> str:
    """The installed webshepherd's version (``0.0.0`` when not installed)."""
    try:
        return metadata.version("webshepherd")
    except metadata.PackageNotFoundError:
        return "0.0.0"


class AsyncClient:
    """A connection to the daemon. Use ``async with``, or ``connect()`` / ``close()``."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        name: str = "webshepherd-python",
        version: str | None = None,
        role: Role = "agent",
        approver: str | None = None,
        reconnect: bool = True,
        backoff_initial_s: float = 0.1,
        backoff_max_s: float = 5.0,
        connect_timeout_s: float = 10.0,
        reconnect_wait_s: float = 30.0,
        ssl: Any = None,
        max_size: int = MAX_FRAME_BYTES,
    ) -> None:
        self.url = daemon_url(url)  # None: $WEBSHEPHERD_URL, else ws://127.0.0.1:8765/v1
        self._token = token
        self._token_from_store = token is None
        self.info = ClientInfo(name=name, version=version or client_version(), role=role)
        # a person's tool passes the approver credential it holds (the TUI: its own file);
        # the SDK never looks one up: an agent's client has none
        self._approver = approver
        self.reconnect = reconnect
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.connect_timeout_s = connect_timeout_s
        self.reconnect_wait_s = reconnect_wait_s
        self._ssl = ssl
        self._max_size = max_size
        self.welcome: Welcome | None = None
        self.reconnects = 0
        self._core = ClientCore(self.info)
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._reconnector: asyncio.Task[None] | None = None
        self._replies: dict[str, asyncio.Future[BaseModel]] = {}
        self._progress: dict[str, ProgressCallback] = {}
        self._subs: list[Subscription] = []
        self._checklist_waiters: dict[str, list[asyncio.Future[Checklist]]] = {}
        self._connected = asyncio.Event()
        self._state_changed = asyncio.Event()
        self._closing = False

    async def __aenter__(self) -> AsyncClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ----------------------------------------------------------------- lifecycle

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def connect(self) -> Welcome:
        """Open the connection and say hello. Raises on a refused token or an unreachable daemon."""
        self._closing = False
        self._core.refused = None
        await until_daemon(self._open, self.url, getattr(self, "daemon_wait_s", DAEMON_WAIT_S))
        assert self.welcome is not None
        return self.welcome

    async def close(self) -> None:
        """Close the connection, stop reconnecting and end every subscription."""
        self._closing = True
        if self._reconnector is not None:
            self._reconnector.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reconnector
            self._reconnector = None
        ws = self._ws
        if ws is not None:
            with contextlib.suppress(Exception):
                await ws.close()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
            self._reader = None
        self._connected.clear()
        self._fail_waiting(ConnectionLostError("the client was closed"))
        for sub in list(self._subs):
            sub._finish(None)
        self._subs.clear()
        self._signal()

    def _resolve_token(self) -> str:
        if self._token_from_store:
            token = TokenStore().read()
            if not token:
                raise UnauthorizedError(
                    "no pairing token found: start the daemon once (`webshepherd serve` "
                    "creates it), then connect again, or pass token=... "
                    "(`webshepherd token` prints it)"
                )
            self._token = token
        assert self._token is not None
        return self._token

    async def _open(self) -> None:
        token = self._resolve_token()
        try:
            ws = await connect(
                self.url,
                open_timeout=self.connect_timeout_s,
                max_size=self._max_size,
                ssl=self._ssl,
                ping_interval=20,
                ping_timeout=20,
            )
        except (OSError, WebSocketException, TimeoutError) as exc:
            raise ConnectionLostError(
                f"cannot reach the webshepherd daemon at {self.url} ({exc}); "
                "is it running? start it with `webshepherd serve`",
                retryable=True,
            ) from None
        self._ws = ws
        self._reader = asyncio.create_task(self._read_loop(ws), name="webshepherd-client-reader")
        try:
            hello = self._core.hello(token, self._approver)
            self.welcome = await self._roundtrip(ws, hello, Welcome, self.connect_timeout_s)
            for sub in list(self._subs):
                if sub.started:
                    request = sub._request(self._core.next_id("m"))
                    await self._roundtrip(ws, request, Subscribed, self.connect_timeout_s)
        except BaseException:
            self._ws = None  # a failed hello is the caller's error: no background reconnect
            with contextlib.suppress(Exception):
                await ws.close()
            raise
        self._connected.set()
        self._signal()

    def _signal(self) -> None:
        self._state_changed.set()
        self._state_changed = asyncio.Event()

    # ----------------------------------------------------------------- reading

    async def _read_loop(self, ws: ClientConnection) -> None:
        try:
            async for frame in ws:
                self._apply(self._core.receive(frame))
        except ConnectionClosed:
            pass
        except Exception:  # a bug in dispatch must not leave calls hanging
            log.exception("webshepherd client reader failed")
        finally:
            if self._ws is ws:
                self._on_disconnect(ws)

    def _apply(self, outcomes: Iterable[Outcome]) -> None:
        """Carry out the core's outcomes: settle futures, run callbacks, feed subscriptions."""
        for outcome in outcomes:
            if isinstance(outcome, Resolved | Failed):
                fut = self._replies.pop(outcome.id, None)
                if fut is None or fut.done():
                    continue
                if isinstance(outcome, Resolved):
                    fut.set_result(outcome.reply)
                else:
                    fut.set_exception(outcome.error)
            elif isinstance(outcome, Event):
                for sub in list(self._subs):
                    sub._offer(outcome.message)
            elif isinstance(outcome, ChecklistArrived):
                session_id = outcome.checklist.session_id
                for waiter in self._checklist_waiters.pop(session_id, []):
                    if not waiter.done():
                        waiter.set_result(outcome.checklist)
            elif isinstance(outcome, Progress):
                callback = self._progress.get(outcome.message.request)
                if callback is not None:
                    try:
                        callback(outcome.message)
                    except Exception:
                        log.exception("score progress callback failed")

    def _on_disconnect(self, ws: ClientConnection) -> None:
        self._connected.clear()
        self._ws = None
        lost = self._core.disconnected(ws.close_code, ws.close_reason or "")
        self._fail_waiting(lost)
        if not self._closing and self.reconnect and self._core.refused is None:
            self._reconnector = asyncio.create_task(
                self._reconnect_loop(), name="webshepherd-reconnect"
            )
        elif not self._closing:
            for sub in list(self._subs):
                sub._finish(lost)
        self._signal()

    def _fail_waiting(self, error: WebShepherdError) -> None:
        self._apply(self._core.fail_all(error))

    async def _reconnect_loop(self) -> None:
        delay = self.backoff_initial_s
        while not self._closing:
            await asyncio.sleep(delay * (0.5 + random.random()))
            try:
                await self._open()
                self.reconnects += 1
                log.info("reconnected to %s", self.url)
                return
            except UnauthorizedError as exc:
                self._core.refused = exc
                for sub in list(self._subs):
                    sub._finish(exc)
                self._signal()
                return
            except (WebShepherdError, OSError, WebSocketException, TimeoutError) as exc:
                log.debug("reconnect to %s failed: %s", self.url, exc)
                delay = min(delay * 2, self.backoff_max_s)

    # ----------------------------------------------------------------- calls

    async def _roundtrip(
        self, ws: ClientConnection, msg: Any, expect: type[R], timeout: float | None = None
    ) -> R:
        fut: asyncio.Future[BaseModel] = asyncio.get_running_loop().create_future()
        self._replies[msg.id] = fut
        self._core.sent(msg, expect)
        try:
            await ws.send(dump(msg))
        except ConnectionClosed:
            self._replies.pop(msg.id, None)
            self._core.forget(msg.id)
            raise ConnectionLostError(
                "connection to the daemon lost while sending", retryable=True
            ) from None
        try:
            reply = await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            self._replies.pop(msg.id, None)
            self._core.forget(msg.id)
            raise WebShepherdError(
                f"no reply to {msg.type!r} within {timeout} s", ErrorCode.TIMEOUT
            ) from None
        assert isinstance(reply, expect)  # the core checked the reply's type
        return reply

    async def _ready(self) -> ClientConnection:
        deadline = time.monotonic() + self.reconnect_wait_s
        while True:
            if self._core.refused is not None:
                raise self._core.refused
            if self._connected.is_set() and self._ws is not None:
                return self._ws
            if self._closing or (self._reconnector is None or self._reconnector.done()):
                raise ConnectionLostError(
                    "not connected to the daemon: call connect() first", retryable=True
                )
            left = deadline - time.monotonic()
            if left <= 0:
                raise ConnectionLostError(
                    f"could not reconnect to {self.url} within {self.reconnect_wait_s} s",
                    retryable=True,
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._state_changed.wait(), left)

    async def call(self, msg: Any, expect: type[R], timeout: float | None = None) -> R:
        """Send one request model (with its ``id``) and return the typed reply."""
        ws = await self._ready()
        return await self._roundtrip(ws, msg, expect, timeout)

    def _next_id(self, prefix: str = "r") -> str:
        return self._core.next_id(prefix)

    # ----------------------------------------------------------------- subscriptions

    async def _start_subscription(self, sub: Subscription) -> None:
        if sub not in self._subs:
            self._subs.append(sub)
        try:
            await self.call(sub._request(self._next_id("m")), Subscribed)
        except BaseException:
            self._subs.remove(sub)
            raise

    def _drop_subscription(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)

    # ----------------------------------------------------------------- requests

    async def start_session(
        self,
        intent: str,
        start_url: str | None = None,
        checklist: str | None = None,
        observation: Observation | dict[str, Any] | None = None,
        agent: AgentInfo | dict[str, Any] | str | None = None,
        source: SessionSource = "agent",
        holds: Literal["browser"] | None = None,
    ) -> SessionHandle:
        """Start a session. ``holds="browser"``: this client's browser pauses every request
        that would commit and asks with :meth:`commit_check`, so the daemon's rules only
        predict (``scored.predicted``) and never hold its steps."""
        if isinstance(agent, str):
            agent = AgentInfo(name=agent)
        msg = SessionStart(
            id=self._next_id("s"),
            intent=intent,
            start_url=start_url,
            checklist=checklist,
            observation=to_model(Observation, observation),
            agent=to_model(AgentInfo, agent) or AgentInfo(name=self.info.name),
            source=source,
            holds=holds,
        )
        started = await self.call(msg, SessionStarted)
        return SessionHandle(self, started.session_id, intent)

    async def observe(
        self,
        session_id: str,
        url: str,
        axtree: str,
        screenshot: Screenshot | dict[str, Any] | None = None,
        elements: Mapping[str, ElementFacts | dict[str, Any]] | None = None,
    ) -> Observed:
        """One observation of the session's page; ``elements`` (bid -> what the page says of
        the element: links, downloads, the form it submits and its method) let the daemon's
        guards hold an action that commits (docs/protocol-additions.md)."""
        msg = Observe(
            id=self._next_id("o"),
            session_id=session_id,
            url=url,
            axtree=axtree,
            screenshot=to_model(Screenshot, screenshot),
            elements=None
            if elements is None
            else {bid: ElementFacts.model_validate(f) for bid, f in elements.items()},
        )
        return await self.call(msg, Observed)

    async def score(
        self,
        session_id: str,
        candidates: Sequence[CandidateLike],
        observation: Observation | dict[str, Any] | None = None,
        samples: int | None = None,
        approval: Literal["auto", "always", "never"] = "auto",
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | None = None,
    ) -> Scored:
        """Score candidate actions; waits for a human decision when approval is requested."""
        msg = Score(
            id=self._next_id("c"),
            session_id=session_id,
            candidates=to_candidates(candidates),
            observation=to_model(Observation, observation),
            samples=samples,
            approval=approval,
        )
        if on_progress is not None:
            self._progress[msg.id] = on_progress
        try:
            return await self.call(msg, Scored, timeout)
        finally:
            self._progress.pop(msg.id, None)

    async def report_action(
        self,
        session_id: str,
        action: str,
        thought: str | None = None,
        step: int | None = None,
        source: Source = "agent",
    ) -> ActionRecorded:
        msg = Action(
            id=self._next_id("x"),
            session_id=session_id,
            step=step,
            action=action,
            thought=thought,
            source=source,
        )
        return await self.call(msg, ActionRecorded)

    async def label(
        self,
        session_id: str,
        step: int,
        action: str,
        items: Sequence[ItemLabel],
        source: Literal["environment", "person"] = "environment",
        note: str | None = None,
    ) -> LabelRecorded:
        """Record ground truth for a candidate scored at ``step``: each checklist item's state
        after ``action`` (docs/protocol-additions.md; training targets come from it)."""
        msg = Label(
            id=self._next_id("l"),
            session_id=session_id,
            step=step,
            action=action,
            items=list(items),
            source=source,
            note=note,
        )
        return await self.call(msg, LabelRecorded)

    async def tree_node(self, session_id: str, node: TreeNodeFields) -> TreeNodeRecorded:
        """Report one node of a tree search, new or changed (``tree.node``; the daemon records
        every update and sends it to the session's subscribers)."""
        fields = node.model_dump(include=set(TreeNodeFields.model_fields))
        msg = TreeNode(id=self._next_id("n"), session_id=session_id, **fields)
        return await self.call(msg, TreeNodeRecorded)

    async def end_session(
        self,
        session_id: str,
        outcome: Literal["success", "failure", "unknown"] = "unknown",
        answer: str | None = None,
    ) -> SessionEnded:
        msg = SessionEnd(
            id=self._next_id("e"), session_id=session_id, outcome=outcome, answer=answer
        )
        return await self.call(msg, SessionEnded)

    def subscribe(
        self, sessions: Literal["*"] | Iterable[str] = "*", *, maxsize: int = 10_000
    ) -> Subscription:
        """Events of the given sessions: ``async for event in client.subscribe(): ...``."""
        return Subscription(self, sessions if sessions == "*" else list(sessions), maxsize)

    async def decide(
        self,
        request_id: str,
        decision: Literal["approve", "reject", "edit"],
        action: str | None = None,
        note: str | None = None,
    ) -> ApprovalResolved:
        msg = ApprovalDecide(
            id=self._next_id("d"),
            request_id=request_id,
            decision=decision,
            action=action,
            note=note,
        )
        return await self.call(msg, ApprovalResolved)

    async def commit_check(
        self, session_id: str, request: HeldRequest, *, timeout: float | None = None
    ) -> CommitDecided:
        """Ask whether a request the browser paused may leave (``commit.check``): the daemon
        answers by the session's mode (in 'ask' a paired person decides, which may take
        until the approval timeout). Let the request go only when ``decision.status`` is
        'approved' and ``request_digest`` is that of the request paused."""
        msg = CommitCheck(id=self._next_id("q"), session_id=session_id, request=request)
        return await self.call(msg, CommitDecided, timeout)

    async def set_mode(self, session_id: str, mode: CommitMode) -> ModeSet:
        """Set a session's mode (``session.mode``): only a paired person's tool may."""
        msg = SessionMode(id=self._next_id("v"), session_id=session_id, mode=mode)
        return await self.call(msg, ModeSet)

    async def pair(self, code: str, name: str) -> Paired:
        """Pair this connection with a one-time code from ``webshepherd pair`` (a person's
        command): the reply holds the approver credential, which this client then presents
        on every reconnect. Keep it where only the person's tool reads it."""
        paired = await self.call(Pair(id=self._next_id("a"), code=code, name=name), Paired)
        self._approver = paired.credential
        return paired

    async def sessions(self, limit: int = 100) -> list[SessionSummary]:
        return (
            await self.call(SessionsList(id=self._next_id("m"), limit=limit), Sessions)
        ).sessions

    async def session(self, session_id: str) -> Session:
        """The whole recorded history of one session (fetched page by page when it does not
        fit one frame; returned as one ``Session``)."""
        first = await self.call(SessionGet(id=self._next_id("m"), session_id=session_id), Session)
        reply, events = first, list(first.events)
        while reply.next is not None:
            msg = SessionGet(id=self._next_id("m"), session_id=session_id, after=reply.next)
            reply = await self.call(msg, Session)
            events += reply.events
        return first.model_copy(update={"events": events, "next": None})

    async def hook_grant(self, session_id: str | None = None) -> HookGranted:
        """:meth:`hook_key`'s grant whole: the key, and ``reply_key``, which checks the
        extension's replies (``protocol.client.page_hook.hook_request``); keep it out of the
        page."""
        return await self.call(HookGrant(id=self._next_id("k"), session_id=session_id), HookGranted)

    async def hook_key(self, session_id: str | None = None) -> str:
        """A key for the extension's page hook (docs/protocol-additions.md): with
        ``session_id``, a page may ``attach`` to this client's session; without, it may start
        one session. Hand it to the agent's own page script only; redeem it within minutes."""
        msg = HookGrant(id=self._next_id("k"), session_id=session_id)
        return (await self.call(msg, HookGranted)).key

    async def ping(self) -> float:
        """Round-trip time in seconds."""
        t0 = time.perf_counter()
        await self.call(Ping(id=self._next_id("p")), Pong)
        return time.perf_counter() - t0

    async def checklist(self, session_id: str, timeout: float | None = 60.0) -> Checklist:
        """The session's checklist (the daemon pushes it once, after ``session.start``)."""
        if session_id in self._core.checklists:
            return self._core.checklists[session_id]
        fut: asyncio.Future[Checklist] = asyncio.get_running_loop().create_future()
        self._checklist_waiters.setdefault(session_id, []).append(fut)
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise WebShepherdError(
                f"no checklist for session {session_id} within {timeout} s", ErrorCode.TIMEOUT
            ) from None
