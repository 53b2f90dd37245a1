"""A blocking wrapper around :class:`AsyncClient`, for scripts and notebooks.

The async client runs on a private event loop in a daemon thread; every method submits the
coroutine to that loop and waits for its result. The constructor and the methods are generated
from the async ones into sync_api.py (gen_sync.py, ``make sync-client``); this module holds the
loop, the properties, ``close``, ``subscribe`` and :class:`SyncSubscription`.

```python
with Client() as client:
    session = client.start_session("Buy the cheapest USB-C cable", observation=obs)
    scored = session.score(["click('12')", "click('40')"])
```
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterable, Iterator
from typing import Literal, TypeVar

from webshepherd.protocol.client.async_client import AsyncClient
from webshepherd.protocol.client.session import SessionHandle, SessionRef
from webshepherd.protocol.client.subscription import Subscription
from webshepherd.protocol.client.sync_api import _ClientMethods, _SessionMethods
from webshepherd.protocol.replies import Welcome
from webshepherd.protocol.union import ServerMessage

__all__ = ["Client", "SyncSession", "SyncSubscription"]
T = TypeVar("T")


class Client(_ClientMethods["SyncSession"]):
    """Same arguments and methods as :class:`AsyncClient`, blocking: the constructor and each
    method are generated from the async ones (sync_api.py, ``make sync-client``), so the two
    cannot drift. Here: the private loop, the properties, ``close`` and ``subscribe``."""

    def _start(self, make: Callable[[], AsyncClient]) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="webshepherd-client", daemon=True
        )
        self._thread.start()
        self.aio = self._run(self._make(make))

    @staticmethod
    async def _make(make: Callable[[], AsyncClient]) -> AsyncClient:
        return make()  # made on the private loop

    def _run(self, coro: Coroutine[object, object, T], timeout: float | None = None) -> T:
        if not self._loop.is_running():
            coro.close()
            raise RuntimeError("this Client is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def _session(self, handle: SessionHandle) -> SyncSession:
        return SyncSession(self, handle.session_id, handle.intent, commits=handle.commits)

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

    def subscribe(
        self, sessions: Literal["*"] | Iterable[str] = "*", *, maxsize: int = 10_000
    ) -> SyncSubscription:
        """Subscribe now; iterate the result for events."""

        async def start() -> Subscription:
            return await self.aio.subscribe(sessions, maxsize=maxsize).start()

        return SyncSubscription(self, self._run(start()))


class SyncSession(SessionRef[Client], _SessionMethods):
    """Blocking counterpart of :class:`SessionHandle` (its methods: sync_api.py)."""

    @property
    def aio(self) -> SessionHandle:
        return SessionHandle(self.client.aio, self.session_id, self.intent, commits=self.commits)

    def _run(self, coro: Coroutine[object, object, T]) -> T:
        return self.client._run(coro)


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
