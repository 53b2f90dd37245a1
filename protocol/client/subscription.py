"""A subscription to the daemon's events: what :meth:`AsyncClient.subscribe` returns."""

from __future__ import annotations

import asyncio
import logging
from typing import Literal, Protocol

from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.requests import Subscribe
from webshepherd.protocol.union import ServerMessage

log = logging.getLogger(__name__)


class SubscriptionOwner(Protocol):
    """What a subscription needs of its client: (re)sending it, and forgetting it."""

    async def _start_subscription(self, sub: Subscription) -> None: ...

    def _drop_subscription(self, sub: Subscription) -> None: ...


class _End:
    """The mark queued after a subscription's last event."""


_END = _End()


class Subscription:
    """An async iterator of events; ends when the client closes or is refused for good.

    The subscription is sent on first iteration (or ``await sub.start()`` /
    ``async with``) and re-sent after every reconnect. It also yields the events of
    this connection's own requests (the daemon answers the requester with a reply
    instead). Its queue is bounded: when the reader falls behind, the oldest events
    are dropped (counted in ``dropped``).
    """

    def __init__(
        self, client: SubscriptionOwner, sessions: Literal["*"] | list[str], maxsize: int
    ) -> None:
        self.client = client
        self.sessions = sessions
        self.started = False
        self.dropped = 0
        self._accepting = False
        self._queue: asyncio.Queue[ServerMessage | WebShepherdError | _End] = asyncio.Queue(maxsize)
        self._done = False

    def _request(self, rid: str) -> Subscribe:
        return Subscribe(id=rid, sessions=self.sessions)

    async def start(self) -> Subscription:
        if not self.started:
            self._accepting = True  # events may arrive right behind the `subscribed` reply
            try:
                await self.client._start_subscription(self)
            except BaseException:
                self._accepting = False
                raise
            self.started = True
        return self

    def close(self) -> None:
        """Stop receiving (the daemon keeps sending to the connection; the client drops them)."""
        self.client._drop_subscription(self)
        self._finish(None)

    async def __aenter__(self) -> Subscription:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> ServerMessage:
        if not self.started and not self._done:
            await self.start()
        item = await self._queue.get()
        if isinstance(item, _End):
            self._queue.put_nowait(_END)  # later calls end too
            raise StopAsyncIteration
        if isinstance(item, WebShepherdError):
            self._queue.put_nowait(_END)
            raise item
        return item

    async def get(self, timeout: float | None = None) -> ServerMessage:
        """The next event, or ``TimeoutError`` after ``timeout`` seconds."""
        return await asyncio.wait_for(self.__anext__(), timeout)

    def _wanted(self, msg: ServerMessage) -> bool:
        if self.sessions == "*":
            return True
        sid = getattr(msg, "session_id", None)
        return sid is None or sid in self.sessions

    def _offer(self, msg: ServerMessage) -> None:
        if self._done or not self._accepting or not self._wanted(msg):
            return
        if self._queue.full():
            self._queue.get_nowait()
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("subscription queue full: dropped %d events", self.dropped)
        self._queue.put_nowait(msg)

    def _finish(self, exc: WebShepherdError | None) -> None:
        if self._done:
            return
        self._done = True
        if self._queue.full():
            self._queue.get_nowait()
        self._queue.put_nowait(exc if exc is not None else _END)
