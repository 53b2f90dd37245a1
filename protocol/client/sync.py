"""A blocking wrapper around :class:`AsyncClient`, for scripts and notebooks.

The async client runs on a private event loop in a daemon thread; every
method here submits the coroutine to that loop and waits for its result.

```python
with Client() as client:
    session = client.start_session("Buy the cheapest USB-C cable", observation=obs)
    scored = session.score(["click('12')", "click('40')"])
```
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Callable, Coroutine, Iterable, Iterator
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.client.session import SessionHandle, SessionRef, Subscription
from webshepherd.protocol.common import Role
from webshepherd.protocol.replies import Welcome
from webshepherd.protocol.union import ServerMessage
from webshepherd.protocol.version import MAX_FRAME_BYTES

__all__ = ["Client", "SyncSession", "SyncSubscription"]
T = TypeVar("T")
P = ParamSpec("P")


def _blocking(
    method: Callable[Concatenate[Any, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[Any, P], T]:
    """The blocking form of an async method, with its signature: run it on ``self.aio`` in
    the private loop."""

    def blocking(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        result: T = self._run(method(self.aio, *args, **kwargs))
        return result

    functools.update_wrapper(blocking, method)
    return blocking


def _blocking_session(
    method: Callable[Concatenate[Any, P], Coroutine[Any, Any, SessionHandle]],
) -> Callable[Concatenate[Client, P], SyncSession]:
    """:func:`_blocking` for a call that starts a session: a :class:`SyncSession` back."""

    def blocking(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> SyncSession:
        handle = self._run(method(self.aio, *args, **kwargs))
        return SyncSession(self, handle.session_id, handle.intent)

    functools.update_wrapper(blocking, method)
    signature = inspect.signature(method).replace(return_annotation="SyncSession")
    setattr(blocking, "__signature__", signature)  # noqa: B010 (a function has no such slot)
    return blocking


class Client:
    """Same arguments and methods as :class:`AsyncClient`, blocking: each method is the async
    one's, wrapped (its own signature), so the two cannot drift."""

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
        """:class:`AsyncClient`'s parameters (a test keeps the two the same)."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="webshepherd-client", daemon=True
        )
        self._thread.start()
        kwargs = dict(
            name=name, version=version, role=role, approver=approver, reconnect=reconnect,
            backoff_initial_s=backoff_initial_s, backoff_max_s=backoff_max_s,
            connect_timeout_s=connect_timeout_s, reconnect_wait_s=reconnect_wait_s, ssl=ssl,
            max_size=max_size,
        )  # fmt: skip
        self.aio: AsyncClient = self._run(self._make(url, token, kwargs))

    @staticmethod
    async def _make(url: str | None, token: str | None, kwargs: dict[str, Any]) -> AsyncClient:
        return AsyncClient(url, token, **kwargs)  # made on the private loop

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        if not self._loop.is_running():
            coro.close()
            raise RuntimeError("this Client is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def __enter__(self) -> Client:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        return self.aio.url

    @property
    def welcome(self) -> Welcome | None:
        return self.aio.welcome

    @property
    def connected(self) -> bool:
        return self.aio.connected

    connect = _blocking(AsyncClient.connect)

    def close(self) -> None:
        """Close the connection and stop the private loop's thread."""
        if not self._loop.is_running():
            return
        try:
            self._run(self.aio.close(), timeout=10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()

    start_session = _blocking_session(AsyncClient.start_session)
    observe = _blocking(AsyncClient.observe)
    score = _blocking(AsyncClient.score)
    report_action = _blocking(AsyncClient.report_action)
    end_session = _blocking(AsyncClient.end_session)
    label = _blocking(AsyncClient.label)
    tree_node = _blocking(AsyncClient.tree_node)
    decide = _blocking(AsyncClient.decide)
    commit_check = _blocking(AsyncClient.commit_check)
    set_mode = _blocking(AsyncClient.set_mode)
    pair = _blocking(AsyncClient.pair)
    sessions = _blocking(AsyncClient.sessions)
    session = _blocking(AsyncClient.session)
    ping = _blocking(AsyncClient.ping)
    hook_key = _blocking(AsyncClient.hook_key)
    hook_grant = _blocking(AsyncClient.hook_grant)
    checklist = _blocking(AsyncClient.checklist)
    call = _blocking(AsyncClient.call)

    def subscribe(
        self, sessions: Literal["*"] | Iterable[str] = "*", *, maxsize: int = 10_000
    ) -> SyncSubscription:
        """Subscribe now; iterate the result for events."""

        async def start() -> Subscription:
            return await self.aio.subscribe(sessions, maxsize=maxsize).start()

        return SyncSubscription(self, self._run(start()))


class SyncSession(SessionRef[Client]):
    """Blocking counterpart of :class:`SessionHandle`."""

    @property
    def aio(self) -> SessionHandle:
        return SessionHandle(self.client.aio, self.session_id, self.intent)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.client._run(coro)

    checklist = _blocking(SessionHandle.checklist)
    observe = _blocking(SessionHandle.observe)
    score = _blocking(SessionHandle.score)
    act = _blocking(SessionHandle.act)
    label = _blocking(SessionHandle.label)
    tree_node = _blocking(SessionHandle.tree_node)
    commit_check = _blocking(SessionHandle.commit_check)
    set_mode = _blocking(SessionHandle.set_mode)
    end = _blocking(SessionHandle.end)


class SyncSubscription:
    """Blocking iterator of events; ``get(timeout)`` waits at most ``timeout`` seconds."""

    def __init__(self, client: Client, sub: Subscription) -> None:
        self._client = client
        self._sub = sub

    def __iter__(self) -> Iterator[ServerMessage]:
        return self

    def __next__(self) -> ServerMessage:
        try:
            return self._client._run(self._sub.__anext__())
        except StopAsyncIteration:
            raise StopIteration from None

    def get(self, timeout: float | None = None) -> ServerMessage:
        return self._client._run(self._sub.get(timeout))

    def close(self) -> None:
        self._client._loop.call_soon_threadsafe(self._sub.close)
