"""The client's connection to the daemon under :class:`~.client.AsyncClient`: hello, the
background reader task (replies to the waiting call by ``id``, events to subscriptions),
failing calls in flight when the connection drops, and reconnecting with backoff. The
behaviour is described in ``client.py``; the request methods are there too.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel
from webshepherd.protocol.client.session import Subscription, own_request_event
from webshepherd.protocol.common import ClientInfo, Role
from webshepherd.protocol.errors import (
    ConnectionLostError,
    ErrorCode,
    ProtocolError,
    UnauthorizedError,
    WebShepherdError,
    error_from_code,
)
from webshepherd.protocol.replies import (
    Checklist,
    Error,
    ScoreProgress,
    Subscribed,
    Welcome,
)
from webshepherd.protocol.requests import Hello
from webshepherd.protocol.token_store import TokenStore
from webshepherd.protocol.union import ServerMessage, dump, parse_server_message
from webshepherd.protocol.version import DEFAULT_URL, MAX_FRAME_BYTES, PROTOCOL_VERSION
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, WebSocketException

log = logging.getLogger(__name__)
R = TypeVar("R", bound=BaseModel)
ProgressCallback = Callable[[ScoreProgress], Any]


def client_version() -> str:
    try:
        from importlib.metadata import version

        return version("webshepherd")
    except Exception:
        return "0.0.0"


class ClientTransport:
    """The connection machinery under :class:`~.client.AsyncClient` (see there)."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        token: str | None = None,
        *,
        name: str = "webshepherd-python",
        version: str | None = None,
        role: Role = "agent",
        reconnect: bool = True,
        backoff_initial_s: float = 0.1,
        backoff_max_s: float = 5.0,
        connect_timeout_s: float = 10.0,
        reconnect_wait_s: float = 30.0,
        ssl: Any = None,
        max_size: int = MAX_FRAME_BYTES,
    ) -> None:
        self.url = url
        self._token = token
        self._token_from_store = token is None
        self.info = ClientInfo(name=name, version=version or client_version(), role=role)
        self.reconnect = reconnect
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.connect_timeout_s = connect_timeout_s
        self.reconnect_wait_s = reconnect_wait_s
        self._ssl = ssl
        self._max_size = max_size
        self.welcome: Welcome | None = None
        self.reconnects = 0
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._reconnector: asyncio.Task[None] | None = None
        self._pending: dict[str, asyncio.Future[BaseModel]] = {}
        self._sent: dict[str, Any] = {}  # the request behind each pending id
        self._progress: dict[str, ProgressCallback] = {}
        self._subs: list[Subscription] = []
        self._checklists: dict[str, Checklist] = {}
        self._checklist_waiters: dict[str, list[asyncio.Future[Checklist]]] = {}
        self._connected = asyncio.Event()
        self._state_changed = asyncio.Event()
        self._closing = False
        self._fatal: WebShepherdError | None = None
        self._ids = itertools.count(1)

    # ----------------------------------------------------------------- lifecycle

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def connect(self) -> Welcome:
        """Open the connection and say hello. Raises on a refused token or an unreachable daemon."""
        self._closing = False
        self._fatal = None
        await self._open()
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
        self._fail_pending(ConnectionLostError("the client was closed"))
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
            hello = Hello(
                id=self._next_id("h"), protocol=PROTOCOL_VERSION, token=token, client=self.info
            )
            self.welcome = await self._roundtrip(ws, hello, Welcome, timeout=self.connect_timeout_s)
            for sub in list(self._subs):
                if sub.started:
                    await self._roundtrip(
                        ws,
                        sub._request(self._next_id("m")),
                        Subscribed,
                        timeout=self.connect_timeout_s,
                    )
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
                self._dispatch(frame)
        except ConnectionClosed:
            pass
        except Exception:  # a bug in dispatch must not leave calls hanging
            log.exception("webshepherd client reader failed")
        finally:
            if self._ws is ws:
                self._on_disconnect(ws)

    def _dispatch(self, frame: str | bytes) -> None:
        try:
            msg: ServerMessage = parse_server_message(frame)
        except ProtocolError as exc:  # e.g. a type from a newer daemon: ignore it
            log.debug("ignoring a frame the client does not understand: %s", exc.message)
            return
        rid = getattr(msg, "id", None)
        if rid is not None and rid in self._pending:
            fut = self._pending.pop(rid)
            request = self._sent.pop(rid, None)
            if not fut.done():
                if isinstance(msg, Error):
                    fut.set_exception(error_from_code(msg.code.value, msg.message, msg.retryable))
                else:
                    fut.set_result(msg)
            event = own_request_event(request, msg) if self._subs else None
            if event is not None:
                for sub in list(self._subs):
                    sub._offer(event)
            return
        if rid is not None and not isinstance(msg, Error):
            return  # a late reply to a call that gave up waiting
        if isinstance(msg, Error):
            log.warning("daemon error %s: %s", msg.code.value, msg.message)
            if msg.code is ErrorCode.UNAUTHORIZED:
                self._fatal = error_from_code(msg.code.value, msg.message)
        elif isinstance(msg, Checklist):
            self._checklists[msg.session_id] = msg
            for waiter in self._checklist_waiters.pop(msg.session_id, []):
                if not waiter.done():
                    waiter.set_result(msg)
        elif isinstance(msg, ScoreProgress):
            callback = self._progress.get(msg.request)
            if callback is not None:
                try:
                    callback(msg)
                except Exception:
                    log.exception("score progress callback failed")
        for sub in list(self._subs):
            sub._offer(msg)

    def _on_disconnect(self, ws: ClientConnection) -> None:
        self._connected.clear()
        self._ws = None
        if ws.close_code == 1008:
            reason = ws.close_reason or "the daemon refused this client (close code 1008)"
            self._fatal = self._fatal or UnauthorizedError(reason)
        lost = self._fatal or ConnectionLostError(
            f"connection to the daemon lost (close code {ws.close_code})", retryable=True
        )
        self._fail_pending(lost)
        if not self._closing and self.reconnect and self._fatal is None:
            self._reconnector = asyncio.create_task(
                self._reconnect_loop(), name="webshepherd-reconnect"
            )
        elif not self._closing:
            for sub in list(self._subs):
                sub._finish(lost)
        self._signal()

    def _fail_pending(self, exc: WebShepherdError) -> None:
        pending, self._pending = self._pending, {}
        self._sent.clear()
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(exc)

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
                self._fatal = exc
                for sub in list(self._subs):
                    sub._finish(exc)
                self._signal()
                return
            except (WebShepherdError, OSError, WebSocketException, TimeoutError) as exc:
                log.debug("reconnect to %s failed: %s", self.url, exc)
                delay = min(delay * 2, self.backoff_max_s)

    # ----------------------------------------------------------------- requests

    def _next_id(self, prefix: str = "r") -> str:
        return f"{prefix}{next(self._ids)}"

    async def _roundtrip(
        self, ws: ClientConnection, msg: Any, expect: type[R], timeout: float | None = None
    ) -> R:
        fut: asyncio.Future[BaseModel] = asyncio.get_running_loop().create_future()
        self._pending[msg.id] = fut
        self._sent[msg.id] = msg
        try:
            await ws.send(dump(msg))
        except ConnectionClosed:
            self._pending.pop(msg.id, None)
            self._sent.pop(msg.id, None)
            raise ConnectionLostError(
                "connection to the daemon lost while sending", retryable=True
            ) from None
        try:
            reply = await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            self._pending.pop(msg.id, None)
            self._sent.pop(msg.id, None)
            raise WebShepherdError(
                f"no reply to {msg.type!r} within {timeout} s", ErrorCode.TIMEOUT
            ) from None
        if not isinstance(reply, expect):
            raise ProtocolError(
                f"expected {expect.__name__} in reply to {msg.type!r}, got {type(reply).__name__}"
            )
        return reply

    async def _ready(self) -> ClientConnection:
        deadline = time.monotonic() + self.reconnect_wait_s
        while True:
            if self._fatal is not None:
                raise self._fatal
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
