"""Connections and the fan-out of frames to them, each through a bounded send queue.

A connection whose queue overflows has lost frames: it is closed with 1013
(try again later) once its queue has stayed full for ``slow_consumer_s``; it
can reconnect and catch up with ``session.get``. Nobody else waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from webshepherd.protocol.common import Role
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

log = logging.getLogger(__name__)
CLOSE_TRY_AGAIN_LATER = 1013


@dataclass(eq=False)
class Conn:
    """One authenticated client connection."""

    id: int
    ws: ServerConnection
    role: Role
    client_name: str
    queue_size: int
    slow_consumer_s: float
    subscriptions: set[str] | Literal["*"] = field(default_factory=set)
    closed: bool = False
    dropped: int = 0
    _queue: asyncio.Queue[str] = field(init=False)
    _writer: asyncio.Task[None] | None = field(default=None, init=False)
    _slow_timer: asyncio.TimerHandle | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._queue = asyncio.Queue(self.queue_size)

    @property
    def label(self) -> str:
        """Who decided, as ``approval.resolved.by`` shows it, e.g. ``monitor:tui``."""
        return f"{self.role}:{self.client_name}"

    def follows(self, session_id: str) -> bool:
        return self.subscriptions == "*" or session_id in self.subscriptions

    def start(self) -> None:
        self._writer = asyncio.get_running_loop().create_task(
            self._write(), name=f"writer-{self.id}"
        )

    def send(self, frame: str) -> bool:
        """Queue a frame; never blocks. False (and 1013 soon) when the queue is full."""
        if self.closed:
            return False
        try:
            self._queue.put_nowait(frame)
            return True
        except asyncio.QueueFull:
            self.dropped += 1
            if self._slow_timer is None:
                loop = asyncio.get_running_loop()
                self._slow_timer = loop.call_later(self.slow_consumer_s, self._close_slow)
            return False

    def _close_slow(self) -> None:
        log.warning(
            "connection %d (%s) is too slow; closing with 1013 after %d dropped frames",
            self.id,
            self.label,
            self.dropped,
        )
        self.close(
            CLOSE_TRY_AGAIN_LATER, "send queue full; reconnect and catch up with session.get"
        )

    def close(self, code: int, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        if self._slow_timer is not None:
            self._slow_timer.cancel()
        if self._writer is not None:
            self._writer.cancel()
        asyncio.get_running_loop().create_task(self._close(code, reason))

    async def _close(self, code: int, reason: str) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close(code, reason)

    async def _write(self) -> None:
        try:
            while True:
                frame = await self._queue.get()
                await self.ws.send(frame)
        except ConnectionClosed:
            pass

    async def drain(self, timeout: float = 1.0) -> None:
        """Wait (briefly) until queued frames are written; used before a deliberate close."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while not self._queue.empty() and loop.time() < end and not self.closed:
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        self.closed = True
        if self._slow_timer is not None:
            self._slow_timer.cancel()
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._writer


class Hub:
    """All authenticated connections; routes events to owners, subscribers and approvers."""

    def __init__(self) -> None:
        self.conns: dict[int, Conn] = {}

    def add(self, conn: Conn) -> None:
        self.conns[conn.id] = conn
        conn.start()

    def remove(self, conn_id: int) -> Conn | None:
        return self.conns.pop(conn_id, None)

    def send(self, conn_id: int, frame: str) -> None:
        conn = self.conns.get(conn_id)
        if conn is not None:
            conn.send(frame)

    def targets(
        self,
        session_id: str,
        owner: int | None,
        *,
        to_approvers: bool = False,
        exclude: int | None = None,
    ) -> Iterable[Conn]:
        for c in list(self.conns.values()):
            if c.id == exclude:
                continue
            if (
                c.id == owner
                or c.follows(session_id)
                or (to_approvers and c.role in ("extension", "monitor"))
            ):
                yield c

    def publish(
        self,
        session_id: str,
        owner: int | None,
        frame: str,
        *,
        to_approvers: bool = False,
        exclude: int | None = None,
    ) -> None:
        for c in self.targets(session_id, owner, to_approvers=to_approvers, exclude=exclude):
            c.send(frame)

    def subscribers(self) -> Iterable[Conn]:
        return [c for c in self.conns.values() if c.subscriptions == "*" or c.subscriptions]
