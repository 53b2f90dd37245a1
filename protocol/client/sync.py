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
import threading
from collections.abc import Callable, Coroutine, Iterable, Iterator
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.client.session import SessionHandle, SessionRef, Subscription
from webshepherd.protocol.common import Observation
from webshepherd.protocol.replies import (
    Welcome,
)
from webshepherd.protocol.union import ServerMessage

__all__ = ["Client", "SyncSession", "SyncSubscription"]
T = TypeVar("T")
P = ParamSpec("P")


def _blocking(
    method: Callable[Concatenate[Any, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[Any, P], T]:
    """The blocking form of an async method: run it on ``self.aio`` in the private loop."""

    def blocking(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        result: T = self._run(method(self.aio, *args, **kwargs))
        return result

    functools.update_wrapper(blocking, method)
    return blocking


class Client:
    """Same arguments and methods as :class:`AsyncClient`, blocking."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="webshepherd-client", daemon=True
        )
        self._thread.start()
        self.aio: AsyncClient = self._run(self._make(*args, **kwargs))

    @staticmethod
    async def _make(*args: Any, **kwargs: Any) -> AsyncClient:
        return AsyncClient(*args, **kwargs)

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

    def start_session(
        self,
        intent: str,
        start_url: str | None = None,
        checklist: str | None = None,
        observation: Observation | dict[str, Any] | None = None,
        agent: Any = None,
        source: Literal["agent", "human", "import"] = "agent",
        holds: Literal["browser"] | None = None,
    ) -> SyncSession:
        handle = self._run(
            self.aio.start_session(
                intent, start_url, checklist, observation, agent, source, holds=holds
            )
        )
        return SyncSession(self, handle.session_id, intent)

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

    def subscribe(self, sessions: Literal["*"] | Iterable[str] = "*") -> SyncSubscription:
        """Subscribe now; iterate the result for events."""

        async def start() -> Subscription:
            return await self.aio.subscribe(sessions).start()

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
