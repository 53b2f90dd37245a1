"""Effect execution: the session machine's effects carried out (writes first, then replies,
events, engine jobs and approval timers), one state change of a session at a time."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from webshepherd.daemon.recorder import Recorder
from webshepherd.daemon.records.events import EventRecord
from webshepherd.daemon.server.engine_runner import EngineRunner
from webshepherd.daemon.server.fanout import Hub
from webshepherd.daemon.server.offload import Offload
from webshepherd.daemon.server.quotas import Quotas
from webshepherd.daemon.sessions import (
    ApprovalClosed,
    AwaitApproval,
    Effect,
    Publish,
    Record,
    Reply,
    RunChecklist,
    RunScore,
    SessionCore,
)
from webshepherd.protocol.union import dump

if TYPE_CHECKING:
    from webshepherd.daemon.server.telemetry import OtlpExport

log = logging.getLogger(__name__)

Spawn = Callable[[int | None, Coroutine[Any, Any, None]], None]


class Executor:
    """Runs :class:`SessionCore`'s effects; ``recorder`` and ``runner`` are set once the
    daemon starts."""

    def __init__(
        self, core: SessionCore, hub: Hub, quotas: Quotas, offload: Offload, spawn: Spawn
    ) -> None:
        self.core, self.hub, self.quotas, self.offload = core, hub, quotas, offload
        self.spawn = spawn
        self.recorder: Recorder | None = None
        self.runner: EngineRunner | None = None
        self.telemetry: OtlpExport | None = None
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.locks: dict[str, asyncio.Lock] = {}

    def _runner(self) -> EngineRunner:
        if self.runner is None:
            raise RuntimeError("the daemon is not started")
        return self.runner

    async def step(self, session_id: str | None, make: Callable[[], list[Effect]]) -> None:
        """One state change of a session, kept only once its record is durable: the
        session's steps run one at a time, and a failed write rolls the change back."""
        lock = self.locks.setdefault(session_id or "", asyncio.Lock())
        async with lock:
            undo = self.core.checkpoint(session_id)
            effects = make()
            try:
                await self.apply(effects)
            except BaseException:
                undo()
                raise
        self.core.touch(session_id)

    async def apply(self, effects: list[Effect]) -> None:
        """Carry out the machine's effects: first every write (its ``Record`` rows and the
        event log of its ``Publish`` events) in one transaction on the recorder's thread;
        only once that is durable the replies, events and engine work, in order. A failed
        write sends nothing and raises (the requester gets ``internal``)."""
        writes: list[Record] = []
        for e in effects:
            if isinstance(e, Record):
                writes.append(e)
            elif isinstance(e, Publish):
                writes.append(EventRecord(e.session_id, e.event))
        if writes:
            assert self.recorder is not None
            await self.recorder.commit(writes)
        for e in effects:
            if isinstance(e, Reply):
                self.hub.send(e.conn, dump(e.message))
            elif isinstance(e, Publish):
                await self.publish(e)
            elif isinstance(e, RunChecklist):
                self._runner().checklist(e)
            elif isinstance(e, RunScore):
                self.spawn(e.conn, self.quotas.counted(e.conn, self._runner().score(e)))
            elif isinstance(e, AwaitApproval):
                loop = asyncio.get_running_loop()
                self.timers[e.request_id] = loop.call_later(e.timeout_s, self._expire, e.request_id)
            elif isinstance(e, ApprovalClosed):
                timer = self.timers.pop(e.request_id, None)
                if timer is not None:
                    timer.cancel()

    async def publish(self, e: Publish) -> None:
        """Serialise the event once, only if someone is to receive it (a big AX tree in the
        offload worker); the session's owner gets it as it gets replies (never dropped),
        others as events."""
        if self.telemetry is not None:
            self.telemetry.offer(e.event)
        owner = self.core.owner_of(e.session_id)
        targets = list(
            self.hub.targets(e.session_id, owner, to_approvers=e.to_approvers, exclude=e.exclude)
        )
        if not targets:
            return
        axtree = getattr(e.event, "axtree", None)
        frame = await self.offload.dump(e.event, len(axtree) if isinstance(axtree, str) else 0)
        for c in targets:
            c.send(frame, reply=c.id == owner)

    async def evict_loop(self, idle_s: float) -> None:
        """Every so often, forget the sessions nobody touched for ``idle_s`` and that have
        no engine job, no open approval and no step under way."""
        while True:
            await asyncio.sleep(min(60.0, max(0.05, idle_s / 4)))
            busy = set(self._runner().engaged())  # every engine job, queueing to record
            busy |= {sid for sid, lock in self.locks.items() if lock.locked()}
            for sid in self.core.idle(idle_s, busy):
                self.core.evict(sid)
                self.locks.pop(sid, None)

    def cancel_timers(self) -> None:
        for timer in self.timers.values():
            timer.cancel()

    def _expire(self, request_id: str) -> None:
        self.timers.pop(request_id, None)
        self.spawn(None, self._expire_now(request_id))

    async def _expire_now(self, request_id: str) -> None:
        try:
            sid = self.core.approval_session(request_id)
            await self.step(sid, lambda: self.core.expire(request_id))
        except Exception:
            log.exception("expiring approval %s failed", request_id)
