"""Connections and the fan-out of frames to them, each through a bounded send queue.

Every connection has a send queue bounded by frames (``queue_frames``) and by bytes
(``queue_bytes``). Replies to a connection's own requests are always queued: a client that
reads never loses one. Instead, the daemon stops reading a connection's next request while
its queue is over a bound (:meth:`Conn.room`), so a client that pipelines is slowed to the
pace at which it reads. Events (another session's updates, progress, stats) are dropped
while the queue is over a bound. A connection whose queue stays over a bound while nothing
at all is written to it for ``slow_consumer_s`` has stopped reading: it is closed with 1013
(try again later); it can reconnect and catch up with ``session.get``. Nobody else waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from webshepherd.daemon.server.approvers import Approver
from webshepherd.daemon.sessions.caller import Caller
from webshepherd.protocol.common import Role
from webshepherd.protocol.tasks import reap
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

log = logging.getLogger(__name__)
CLOSE_TRY_AGAIN_LATER = 1013


@dataclass(eq=False)
class Conn:
    """One authenticated client connection.

    ``declared`` is the role its ``hello`` declared: it only opens what is harmless (an
    extension observes, draws the overlay, redeems page-hook keys, sees approval requests).
    ``approver`` is the paired person tool whose credential the ``hello`` presented (or that
    paired on this connection): only then may it decide, and :attr:`role` is its role.
    """

    id: int
    ws: ServerConnection
    declared: Role
    client_name: str
    queue_frames: int
    slow_consumer_s: float
    queue_bytes: int = 16 * 1024 * 1024
    approver: Approver | None = None
    subscriptions: set[str] | Literal["*"] = field(default_factory=set)
    closed: bool = False
    dropped: int = 0  # events dropped because the queue was over a bound
    _queue: deque[str] = field(default_factory=deque, init=False)
    _queued_bytes: int = field(default=0, init=False)
    _ready: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _room: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _writer: asyncio.Task[None] | None = field(default=None, init=False)
    _slow_timer: asyncio.TimerHandle | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._room.set()

    @property
    def role(self) -> Role:
        """The role granted: the paired credential's, else ``agent`` (never the declared one)."""
        return self.approver.role if self.approver is not None else "agent"

    @property
    def label(self) -> str:
        """Who decided, as ``approval.resolved.by`` shows it: ``<role>:<paired name>``, e.g.
        ``monitor:laptop-tui``; an unpaired connection's (logs only) ``<declared>:<name>``."""
        if self.approver is not None:
            return self.approver.label
        return f"{self.declared}:{self.client_name}"

    @property
    def who(self) -> Role:
        """The role an error names: the granted one of a paired tool, else the declared one."""
        return self.approver.role if self.approver is not None else self.declared

    @property
    def is_agent(self) -> bool:
        """An agent's connection: declared so, and not a paired person tool."""
        return self.approver is None and self.declared == "agent"

    def caller(self) -> Caller:
        """This connection as the session machine reads it (its facts now)."""
        return Caller(self.id, self.label, self.who, self.is_agent, self.approver is not None)

    @property
    def shows_approvals(self) -> bool:
        """Gets approval requests: an approver, or an extension (display only, unpaired)."""
        return self.approver is not None or self.declared == "extension"

    @property
    def queued(self) -> tuple[int, int]:
        """Frames and bytes waiting to be written."""
        return len(self._queue), self._queued_bytes

    def follows(self, session_id: str) -> bool:
        return self.subscriptions == "*" or session_id in self.subscriptions

    def start(self) -> None:
        self._writer = asyncio.get_running_loop().create_task(
            self._write(), name=f"writer-{self.id}"
        )

    def _full(self) -> bool:
        return len(self._queue) >= self.queue_frames or self._queued_bytes >= self.queue_bytes

    def send(self, frame: str, *, reply: bool = False) -> bool:
        """Queue a frame; never blocks. A reply is always queued; an event is dropped (False)
        while the queue is over a bound."""
        if self.closed:
            return False
        if not reply and self._full():
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning(
                    "connection %d (%s): %d events dropped (send queue over its bound)",
                    self.id,
                    self.label,
                    self.dropped,
                )
            return False
        self._queue.append(frame)
        self._queued_bytes += len(frame)
        self._ready.set()
        if self._full():
            self._room.clear()
            self._arm_slow_timer()
        return True

    async def room(self) -> None:
        """Wait until the queue is under its bounds (or the connection is closed): the daemon
        reads a connection's next request only then."""
        while not self._room.is_set() and not self.closed:
            await self._room.wait()

    def _arm_slow_timer(self) -> None:
        if self._slow_timer is None:
            loop = asyncio.get_running_loop()
            self._slow_timer = loop.call_later(self.slow_consumer_s, self._close_slow)

    def _progress(self) -> None:
        """A frame was written: the client reads. Restart (or stop) the stall clock."""
        if self._slow_timer is not None:
            self._slow_timer.cancel()
            self._slow_timer = None
        if self._full():
            self._arm_slow_timer()
        else:
            self._room.set()

    def _close_slow(self) -> None:
        self._slow_timer = None
        frames, size = self.queued
        log.warning(
            "connection %d (%s) stopped reading (%d frames, %d bytes queued, nothing written "
            "for %g s); closing with 1013",
            self.id,
            self.label,
            frames,
            size,
            self.slow_consumer_s,
        )
        self.close(
            CLOSE_TRY_AGAIN_LATER, "send queue full; reconnect and catch up with session.get"
        )

    def close(self, code: int, reason: str) -> None:
        if self.closed:
            return
        self._shut()
        asyncio.get_running_loop().create_task(self._close(code, reason))

    def _shut(self) -> None:
        self.closed = True
        self._room.set()
        if self._slow_timer is not None:
            self._slow_timer.cancel()
            self._slow_timer = None
        if self._writer is not None:
            self._writer.cancel()
        self._queue.clear()
        self._queued_bytes = 0

    async def _close(self, code: int, reason: str) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close(code, reason)

    async def _write(self) -> None:
        try:
            while True:
                while not self._queue:
                    self._ready.clear()
                    await self._ready.wait()
                frame = self._queue[0]
                await self.ws.send(frame)
                self._queue.popleft()
                self._queued_bytes -= len(frame)
                self._progress()
        except ConnectionClosed:
            pass

    async def drain(self, timeout: float = 1.0) -> None:
        """Wait (briefly) until queued frames are written; used before a deliberate close."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while self._queue and loop.time() < end and not self.closed:
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        writer = self._writer
        self._shut()
        await reap(writer)  # a cancellation of stop()'s caller still propagates


class Hub:
    """All authenticated connections; routes events to owners, subscribers and approvers."""

    def __init__(self) -> None:
        self.conns: dict[int, Conn] = {}

    def add(self, conn: Conn) -> None:
        self.conns[conn.id] = conn
        conn.start()

    def remove(self, conn_id: int) -> Conn | None:
        return self.conns.pop(conn_id, None)

    def send(self, conn_id: int, frame: str, *, reply: bool = True) -> None:
        """A frame for one connection: by default a reply (always queued)."""
        conn = self.conns.get(conn_id)
        if conn is not None:
            conn.send(frame, reply=reply)

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
            if c.id == owner or c.follows(session_id) or (to_approvers and c.shows_approvals):
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
