"""The client SDK's connection: the socket, the reader task, the futures of waiting calls,
reconnecting and subscriptions, around the sans-I/O :class:`~.core.ClientCore`.
:class:`~.async_client.AsyncClient` is this connection with the protocol's requests."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterable
from importlib import metadata
from ssl import SSLContext
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

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
from webshepherd.protocol.client.subscription import Subscription
from webshepherd.protocol.client.wait import DAEMON_WAIT_S, until_daemon
from webshepherd.protocol.common import (
    ClientInfo,
    Role,
)
from webshepherd.protocol.errors import (
    ConnectionLostError,
    ErrorCode,
    UnauthorizedError,
    WebShepherdError,
)
from webshepherd.protocol.replies import (
    Checklist,
    ScoreProgress,
    Subscribed,
    Welcome,
)
from webshepherd.protocol.requests import ClientMessage
from webshepherd.protocol.tasks import reap
from webshepherd.protocol.token_store import TokenStore
from webshepherd.protocol.union import dump
from webshepherd.protocol.version import DEFAULT_PATH, MAX_FRAME_BYTES, daemon_url
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

log = logging.getLogger(__name__)
R = TypeVar("R", bound=BaseModel)
#: seconds between the client's pings (a pong may take twice this, for a loaded machine; a
#: close handshake, :data:`CLOSE_WAIT_S`): a daemon gone silent (its host down, the network
#: cut) is noticed within about four times this; a killed daemon's closed socket at once
KEEPALIVE_S = 3.0
CLOSE_WAIT_S = 2.0
#: how long a call made while the connection is down waits for the reconnect before it fails
#: naming the daemon (a killed daemon must fail a paused request's gate fast, not hang it)
RECONNECT_WAIT_S = 3.0
ProgressCallback = Callable[[ScoreProgress], object]


def client_version() -> str:
    """The installed webshepherd's version (``0.0.0`` when not installed)."""
    try:
        return metadata.version("webshepherd")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def checked_url(url: str) -> str:
    """``url`` when a daemon can serve it (``ws://`` or ``wss://``), else the error that says
    what to write instead, before anything connects."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # a bad port raises here
    except ValueError as exc:
        raise WebShepherdError(f"not a daemon address: {url!r} ({exc})") from None
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        ws = {"http": "ws", "https": "wss"}.get(parts.scheme, "ws")
        where = parts.netloc or "127.0.0.1:8765"
        raise WebShepherdError(
            f"not a daemon address: {url!r}; the daemon speaks WebSocket at "
            f"{ws}://{where}{DEFAULT_PATH}"
        )
    return url


def refused_upgrade(url: str, exc: InvalidStatus) -> WebShepherdError:
    """What an HTTP answer instead of a WebSocket means: a server is there, so waiting for it
    would not help (a 404: the wrong path; the daemon says which path it serves)."""
    status = exc.response.status_code
    body = (exc.response.body or b"").decode("utf-8", "replace").strip()
    if status == 404:
        said = body.removeprefix("use ").strip()
        path = said if body.startswith("use /") else DEFAULT_PATH
        parts = urlsplit(url)
        right = urlunsplit((parts.scheme, parts.netloc, path, "", ""))
        return ConnectionLostError(
            f"wrong path: {url} is not the daemon's address (HTTP 404); the daemon serves {right}",
            retryable=False,
        )
    return ConnectionLostError(
        f"the server at {url} refused the connection (HTTP {status}"
        + (f": {body[:200]}" if body else "")
        + ")",
        retryable=False,
    )


class Connection:
    """A connection to the daemon: ``connect()`` / ``close()``, ``call(request, reply type)``."""

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
        reconnect_wait_s: float = RECONNECT_WAIT_S,
        daemon_wait_s: float = DAEMON_WAIT_S,
        ssl: SSLContext | bool | None = None,
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
        self.daemon_wait_s = daemon_wait_s  # connect(): the longest it waits for a starting serve
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
        self._retry_now = asyncio.Event()  # a call waits: the reconnector tries without backoff
        self._lost_at: float | None = None  # when the connection went (monotonic)
        self._last_failure = ""  # why the last reconnect failed
        self._closing = False

    # ----------------------------------------------------------------- lifecycle

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def connect(self) -> Welcome:
        """Open the connection and say hello. Raises on a refused token or an unreachable daemon."""
        self._closing = False
        self._core.refused = None
        checked_url(self.url)  # an http:// URL fails here, not after waiting for a daemon
        await until_daemon(self._open, self.url, self.daemon_wait_s)
        assert self.welcome is not None
        return self.welcome

    async def close(self) -> None:
        """Close the connection, stop reconnecting and end every subscription."""
        self._closing = True
        if self._reconnector is not None:
            self._reconnector.cancel()
            await reap(self._reconnector)
            self._reconnector = None
        ws = self._ws
        if ws is not None:
            with contextlib.suppress(Exception):
                await ws.close()
        if self._reader is not None:
            await reap(self._reader)
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
                ping_interval=KEEPALIVE_S,
                ping_timeout=2 * KEEPALIVE_S,
                close_timeout=CLOSE_WAIT_S,
            )
        except InvalidStatus as exc:  # a server answered, but not as the daemon's WebSocket
            raise refused_upgrade(self.url, exc) from None
        except (OSError, WebSocketException, TimeoutError) as exc:
            self._last_failure = str(exc) or type(exc).__name__
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
        self._lost_at = None
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
        self._lost_at, self._last_failure = time.monotonic(), ""
        lost = self._core.disconnected(ws.close_code, ws.close_reason or "", self.url)
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
            with contextlib.suppress(TimeoutError):  # a waiting call cuts the backoff short
                await asyncio.wait_for(self._retry_now.wait(), delay * (0.5 + random.random()))
            self._retry_now.clear()
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
        self,
        ws: ClientConnection,
        msg: ClientMessage,
        expect: type[R],
        timeout: float | None = None,
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
                f"connection to the webshepherd daemon at {self.url} lost while sending "
                f"{msg.type!r}; it was not sent",
                retryable=True,
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
            self._retry_now.set()
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._gone()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._state_changed.wait(), left)

    def _gone(self) -> ConnectionLostError:
        """The error of a call made while the daemon stays away: which daemon, for how long."""
        since = time.monotonic() - (self._lost_at or time.monotonic())
        last = f" (the last try: {self._last_failure})" if self._last_failure else ""
        return ConnectionLostError(
            f"the webshepherd daemon at {self.url} is gone: the connection was lost "
            f"{since:.1f} s ago and not back within {self.reconnect_wait_s:g} s{last}. "
            "The client keeps reconnecting; until then every call fails (start the daemon "
            "with `webshepherd serve`)",
            retryable=True,
        )

    async def call(self, msg: ClientMessage, expect: type[R], timeout: float | None = None) -> R:
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
