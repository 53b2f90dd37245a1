"""The queue in front of the engine: one worker thread, round-robin across sessions.

Every model call of every session goes through :class:`Scheduler`. Jobs of one
session run in the order they came; sessions take turns. A job belongs to the
connection that asked for it (or to none): when that connection goes away its
queued jobs are dropped and a running one has its cancel ``Event`` set. A job
that waits or runs longer than its timeout answers ``timeout``; past
``queue_limit`` queued jobs a new one answers ``overloaded``.

Batching across sessions: a job submitted with :meth:`Scheduler.run_batched` carries an
item and a runner ``run_many(items, cancels) -> [result or exception]``. When such a job
is next, the worker also takes the heads of the following sessions' queues (round-robin
order, at most one job per session, up to ``batch_sessions`` jobs) whose head has the same
runner, and runs them in one call. A session with many queued jobs therefore never holds
back another: each round takes at most one of its jobs.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from webshepherd.protocol.errors import OverloadedError, RequestTimeoutError
from webshepherd.protocol.tasks import reap

T = TypeVar("T")
ItemT = TypeVar("ItemT")

# run_many(items, cancels) -> one result or exception per item, in order (worker thread)
BatchRunner = Callable[[Sequence[ItemT], Sequence[threading.Event]], Sequence[T | BaseException]]


@dataclass
class Job(Generic[T]):
    """One unit of engine work: ``fn(cancel_event)`` runs on the worker thread, or, for a
    batched job, ``runner([item, ...], [cancel, ...])`` with other sessions' jobs."""

    session_id: str
    conn_id: int | None
    fn: Callable[[threading.Event], T] | None
    future: asyncio.Future[T]
    seq: int
    item: Any = None  # a batched job's item, of its runner's item type
    runner: BatchRunner[Any, T] | None = None
    enqueued_at: float = field(default_factory=time.monotonic)
    started_at: float | None = None
    cancel: threading.Event = field(default_factory=threading.Event)

    @property
    def queue_s(self) -> float:
        end = self.started_at if self.started_at is not None else time.monotonic()
        return end - self.enqueued_at


@dataclass(frozen=True)
class Finished(Generic[T]):
    value: T
    queue_ms: float
    run_ms: float


@dataclass
class BatchStats:
    """What the worker ran: engine calls, the jobs in them, and how many calls were shared."""

    calls: int = 0
    jobs: int = 0
    batched_calls: int = 0  # calls that ran more than one session's job
    batched_jobs: int = 0  # jobs that ran in such a call
    largest: int = 0  # the most jobs one call ran


class Scheduler:
    """Fair queue + single worker thread. Start with :meth:`start`, stop with :meth:`stop`.

    ``batch_sessions``: the most jobs (one per session) a batched call takes; 1 disables
    batching. ``gather_s``: when an idle worker wakes up for a batched job, it waits this long
    first, so requests sent together (several sessions' agents at one moment) share the call.
    """

    def __init__(
        self,
        *,
        queue_limit: int,
        timeout_s: float,
        batch_sessions: int = 1,
        gather_s: float = 0.002,
    ):
        self.queue_limit = queue_limit
        self.timeout_s = timeout_s
        self.batch_sessions = max(1, batch_sessions)
        self.gather_s = gather_s
        self.batch_stats = BatchStats()
        self._queues: OrderedDict[str, deque[Job[Any]]] = OrderedDict()
        self._running: list[Job[Any]] = []
        self._wakeup = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engine")
        self._task: asyncio.Task[None] | None = None
        self._seq = itertools.count()

    # -- introspection -------------------------------------------------
    @property
    def depth(self) -> int:
        return sum(len(q) for q in self._queues.values())

    @property
    def in_flight(self) -> int:
        """Jobs the worker is running now (more than one in a batched call)."""
        return len(self._running)

    # -- lifecycle -----------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="scheduler")

    async def stop(self) -> None:
        for q in self._queues.values():
            for job in q:
                job.future.cancel()
        self._queues.clear()
        for job in self._running:
            job.cancel.set()
        if self._task is not None:
            self._task.cancel()
            await reap(self._task)  # a cancellation of stop()'s caller still propagates
        await asyncio.get_running_loop().run_in_executor(None, self._executor.shutdown, True)

    # -- submitting ----------------------------------------------------
    async def run(
        self, session_id: str, conn_id: int | None, fn: Callable[[threading.Event], T]
    ) -> Finished[T]:
        """Queue ``fn`` (it runs alone) and wait for it; raises ``OverloadedError`` /
        ``RequestTimeoutError``."""
        return await self.wait(self.enqueue(session_id, conn_id, fn))

    def enqueue(
        self, session_id: str, conn_id: int | None, fn: Callable[[threading.Event], T]
    ) -> Job[T]:
        """Queue ``fn`` now (raises ``OverloadedError``); :meth:`wait` for its result."""
        loop = asyncio.get_running_loop()
        job = Job(session_id, conn_id, fn, self._admit(loop), next(self._seq))
        self._enqueue(job)
        return job

    @property
    def full(self) -> bool:
        return self.depth >= self.queue_limit

    async def run_batched(
        self, session_id: str, conn_id: int | None, item: ItemT, runner: BatchRunner[ItemT, T]
    ) -> Finished[T]:
        """Queue ``item`` for ``runner`` (it may share a call with other sessions' items of the
        same runner) and wait for its result; an exception the runner returns for it is
        raised here. Same errors as :meth:`run`."""
        loop = asyncio.get_running_loop()
        job: Job[T] = Job(
            session_id, conn_id, None, self._admit(loop), next(self._seq), item, runner
        )
        self._enqueue(job)
        return await self.wait(job)

    def _admit(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future[Any]:
        if self.full:
            raise OverloadedError(
                f"the queue is full ({self.queue_limit} requests waiting); retry later"
            )
        return loop.create_future()

    def _enqueue(self, job: Job[Any]) -> None:
        self._queues.setdefault(job.session_id, deque()).append(job)
        self._wakeup.set()

    async def wait(self, job: Job[T]) -> Finished[T]:
        """The result of a queued job (``RequestTimeoutError`` past the timeout)."""
        try:
            value = await asyncio.wait_for(asyncio.shield(job.future), self.timeout_s)
        except TimeoutError:
            self._abandon(job)
            raise RequestTimeoutError(f"no result within {self.timeout_s:g} s") from None
        except asyncio.CancelledError:
            self._abandon(job)
            raise
        assert job.started_at is not None
        run_s = time.monotonic() - job.started_at
        return Finished(value, job.queue_s * 1000, run_s * 1000)

    def cancel_connection(self, conn_id: int) -> int:
        """Drop the queued jobs of a connection and signal its running one; returns how many."""
        n = 0
        for sid in list(self._queues):
            q = self._queues[sid]
            keep = deque(j for j in q if j.conn_id != conn_id)
            for j in q:
                if j.conn_id == conn_id:
                    j.future.cancel()
                    n += 1
            if keep:
                self._queues[sid] = keep
            else:
                del self._queues[sid]
        for job in self._running:
            if job.conn_id == conn_id:
                job.cancel.set()
                n += 1
        return n

    def _abandon(self, job: Job[Any]) -> None:
        q = self._queues.get(job.session_id)
        if q is not None and job in q:
            q.remove(job)
            if not q:
                del self._queues[job.session_id]
        job.cancel.set()
        if not job.future.done():
            job.future.cancel()

    # -- the worker loop -----------------------------------------------
    def _next_job(self) -> Job[Any] | None:
        """Round-robin: take the head of the first session's queue, then move it to the back."""
        while self._queues:
            sid, q = next(iter(self._queues.items()))
            job = self._pop_head(sid, q)
            if not job.future.done():
                return job
        return None

    def _pop_head(self, sid: str, q: deque[Job[Any]]) -> Job[Any]:
        job = q.popleft()
        if q:
            self._queues.move_to_end(sid)
        else:
            del self._queues[sid]
        return job

    def _head_batchable(self) -> bool:
        q = next(iter(self._queues.values()), None)
        return q is not None and bool(q) and q[0].runner is not None

    def _next_batch(self) -> list[Job[Any]]:
        """The next job, and for a batched one the heads of the following sessions' queues that
        share its runner (one per session, in round-robin order, ``batch_sessions`` at most)."""
        first = self._next_job()
        if first is None:
            return []
        batch = [first]
        if first.runner is None or self.batch_sessions < 2:
            return batch
        for sid in list(self._queues):
            if len(batch) >= self.batch_sessions:
                break
            q = self._queues[sid]
            while q and q[0].future.done():  # abandoned heads: drop them
                q.popleft()
            if not q:
                del self._queues[sid]
                continue
            head = q[0]
            if sid == first.session_id or head.runner != first.runner:
                continue  # an opaque job (or another runner) keeps its turn
            batch.append(self._pop_head(sid, q))
        return batch

    async def _loop(self) -> None:
        idle = False
        while True:
            if idle and 0 < len(self._queues) < self.batch_sessions and self._head_batchable():
                await asyncio.sleep(self.gather_s)  # let requests sent together arrive
            idle = False
            batch = self._next_batch()
            if not batch:
                self._wakeup.clear()
                await self._wakeup.wait()
                idle = True
                continue
            now = time.monotonic()
            for job in batch:
                job.started_at = now
            self._running = batch
            try:
                if batch[0].runner is None:
                    await self._run_alone(batch[0])
                else:
                    await self._run_many(batch)
            finally:
                self._running = []
                self._count(len(batch))

    def _count(self, n: int) -> None:
        st = self.batch_stats
        st.calls += 1
        st.jobs += n
        st.largest = max(st.largest, n)
        if n > 1:
            st.batched_calls += 1
            st.batched_jobs += n

    async def _run_alone(self, job: Job[Any]) -> None:
        assert job.fn is not None
        loop = asyncio.get_running_loop()
        try:
            value = await loop.run_in_executor(self._executor, job.fn, job.cancel)
        except Exception as exc:
            self._settle(job, exc)
        else:
            self._settle(job, value)

    async def _run_many(self, batch: list[Job[Any]]) -> None:
        runner = batch[0].runner
        assert runner is not None
        loop = asyncio.get_running_loop()
        items = [j.item for j in batch]
        cancels = [j.cancel for j in batch]
        try:
            results = await loop.run_in_executor(self._executor, runner, items, cancels)
            if len(results) != len(batch):
                raise RuntimeError(f"the batch runner gave {len(results)} results for {len(batch)}")
        except Exception as exc:  # the runner itself failed: every member gets the error
            results = [exc] * len(batch)
        for job, value in zip(batch, results, strict=True):
            self._settle(job, value)

    @staticmethod
    def _settle(job: Job[Any], value: object) -> None:
        """The job's result, or its exception as it came (this job's only): whoever waits for
        it says what failed (the engine runner, through engine/failures.py)."""
        if job.future.done():
            return
        if isinstance(value, BaseException):
            job.future.set_exception(value)
        else:
            job.future.set_result(value)
