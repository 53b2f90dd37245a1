"""The daemon's engine work: checklist and scoring jobs on the scheduler, score progress
frames, and the periodic stats frames. :class:`EngineRunner` is owned by
:class:`~.server.DaemonServer`, which hands it its dependencies and three callbacks. A
checklist's result, or its failure, goes back to the session machine, which owns the
checklist and the scores waiting for it (sessions/checklists.py). What an engine raises
reaches the requester as engine/failures.py's ``model_error`` makes it."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from webshepherd.daemon.engine.failures import model_error
from webshepherd.daemon.engine.types import ParsedChecklist, StepInput, StepScore
from webshepherd.daemon.server.stats import device_stats, remote_stats
from webshepherd.daemon.sessions import Effect, RunChecklist, RunScore
from webshepherd.protocol.common import Timing
from webshepherd.protocol.errors import ModelError, WebShepherdError
from webshepherd.protocol.replies import Error, RemoteEngineStats, ScoreProgress
from webshepherd.protocol.union import dump

if TYPE_CHECKING:
    from webshepherd.daemon.engine.api import EngineAPI
    from webshepherd.daemon.server.fanout import Hub
    from webshepherd.daemon.server.scheduler import Job, Scheduler
    from webshepherd.daemon.server.stats import StatsCollector
    from webshepherd.daemon.server.telemetry import OtlpExport
    from webshepherd.daemon.sessions import SessionCore

log = logging.getLogger(__name__)


PROGRESS_INTERVAL_S = 0.05


class CoalescedProgress:
    """Score progress gathered per (candidate, sample) and sent at most every ``interval_s``:
    the engine calls :meth:`add` per token from its thread; one frame per row that moved
    goes out per interval, so a 64 × 5 request costs a few hundred frames, not one per
    token, and its progress can never crowd out its reply."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        send: Callable[[int, int, str], None],
        interval_s: float,
    ):
        self._loop, self._send, self._interval_s = loop, send, interval_s
        self._lock = threading.Lock()
        self._pending: dict[tuple[int, int], list[str]] = {}
        self._scheduled = False

    def add(self, candidate: int, sample: int, delta: str) -> None:
        """Any thread."""
        with self._lock:
            self._pending.setdefault((candidate, sample), []).append(delta)
            if self._scheduled:
                return
            self._scheduled = True
        self._loop.call_soon_threadsafe(self._loop.call_later, self._interval_s, self.flush)

    def flush(self) -> None:
        """The event loop's thread: send what has gathered."""
        with self._lock:
            pending, self._pending = self._pending, {}
            self._scheduled = False
        for (candidate, sample), parts in sorted(pending.items()):
            self._send(candidate, sample, "".join(parts))


@dataclass(frozen=True)
class _ScoreItem:
    """A score job as the scheduler batches it: the request and its progress sink."""

    job: RunScore
    progress: Callable[[int, int, str], None]


def _score_error(job: RunScore, exc: Exception) -> WebShepherdError:
    """A scoring failure as the requester sees it (no internals for unexpected ones)."""
    return model_error(exc, "the model failed on this request", context=job.request_id)


Spawn = Callable[[int | None, Coroutine[Any, Any, None]], None]
"""Run a task owned by a connection (None: by the daemon); cancelled with its owner."""
Step = Callable[[str | None, Callable[[], list[Effect]]], Awaitable[None]]
"""Run a session-machine call under the session's lock and carry out its effects."""
ReportError = Callable[[int, str | None, BaseException], None]
"""Answer a request with an error frame."""


class EngineRunner:
    """Runs the engine side of the effects ``RunChecklist`` and ``RunScore`` and sends the
    periodic stats frames."""

    def __init__(
        self,
        *,
        engine: EngineAPI,
        core: SessionCore,
        hub: Hub,
        stats: StatsCollector,
        scheduler: Scheduler,
        telemetry: OtlpExport | None,
        stats_interval_s: float,
        spawn: Spawn,
        step: Step,
        report_error: ReportError,
    ):
        self.engine, self.core, self.hub, self.stats = engine, core, hub, stats
        self.scheduler, self.telemetry = scheduler, telemetry
        self.stats_interval_s = stats_interval_s
        self._spawn, self._step, self._error = spawn, step, report_error
        # sessions whose checklist job is queued or running -> their owner
        self.generating: dict[str, int | None] = {}
        # sessions whose failed checklist generation was logged (once a session)
        self._unparsed_logged: set[str] = set()
        # sessions with engine work between its start and its result's record (not evictable)
        self._engaged: Counter[str] = Counter()

    def engaged(self) -> set[str]:
        """Sessions whose checklist or score is queued, running, or being recorded."""
        return {sid for sid, n in self._engaged.items() if n > 0}

    @contextmanager
    def _engage(self, sid: str, *, held: bool = False) -> Iterator[None]:
        """``sid`` engaged for the block (``held``: already counted by the caller)."""
        if not held:
            self._engaged[sid] += 1
        try:
            yield
        finally:
            self._engaged[sid] -= 1
            if self._engaged[sid] <= 0:
                del self._engaged[sid]

    def checklist(self, job: RunChecklist) -> None:
        """Queue the generation of a session's checklist (the machine asks once at a time);
        its result, or its failure, goes back to the machine, which releases the scores
        waiting for it. One that cannot be queued fails at once (the session's next score
        asks again)."""
        sid, engine = job.session_id, self.engine

        def work(cancel: threading.Event) -> ParsedChecklist:
            return engine.make_checklist(job.intent, job.start_url, job.axtree)

        self._engaged[sid] += 1  # until the result, or the failure, is recorded
        try:
            queued = self.scheduler.enqueue(sid, None, work)
        except WebShepherdError as exc:
            log.warning("checklist of session %s not queued: %s", sid, exc.message)
            self._spawn(None, self._checklist_failed(sid, exc.message))
            return
        self.generating[sid] = job.owner
        self._spawn(None, self._checklist_result(job, queued))

    async def _checklist_failed(self, sid: str, why: str) -> None:
        with self._engage(sid, held=True):
            await self._step(sid, lambda: self.core.checklist_failed(sid, why))

    async def _checklist_result(self, job: RunChecklist, queued: Job[ParsedChecklist]) -> None:
        sid = job.session_id
        with self._engage(sid, held=True):
            try:
                fin = await self.scheduler.wait(queued)
            except Exception as exc:
                err = model_error(exc, "the model failed to make the checklist", context=sid)
                if sid not in self._unparsed_logged:  # once a session; its next step tries again
                    self._unparsed_logged.add(sid)
                    log.warning("session %s has no checklist: %s", sid, err.message)
                if job.owner is not None:
                    self.hub.send(job.owner, dump(Error(code=err.code, message=err.message)))
                await self._step(sid, lambda: self.core.checklist_failed(sid, err.message))
                return
            finally:
                self.generating.pop(sid, None)
            await self._step(sid, lambda: self.core.checklist_ready(sid, fin.value))

    async def score(self, job: RunScore) -> None:
        if job.conn not in self.hub.conns:  # it left while the job waited for its checklist
            log.debug("score %s dropped: connection %d left", job.request_id, job.conn)
            return
        with self._engage(job.session_id):
            await self._score(job)

    async def _score(self, job: RunScore) -> None:
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        progress = CoalescedProgress(
            loop, lambda c, k, d: self._progress(job, c, k, d), PROGRESS_INTERVAL_S
        )
        try:
            fin = await self.scheduler.run_batched(
                job.session_id, job.conn, _ScoreItem(job, progress.add), self._score_many
            )
        except Exception as exc:
            progress.flush()
            self._error(job.conn, job.request_id, exc)
            return
        progress.flush()  # the last deltas before the reply
        self.stats.step_done(
            (time.monotonic() - started) * 1000, fin.value.prompt_tokens, fin.value.generated_tokens
        )
        try:
            timing = Timing(queue_ms=fin.queue_ms, model_ms=fin.run_ms)
            await self._step(job.session_id, lambda: self.core.score_done(job, fin.value, timing))
        except Exception as exc:
            self._error(job.conn, job.request_id, exc)

    def _score_many(
        self, items: Sequence[_ScoreItem], cancels: Sequence[threading.Event]
    ) -> list[StepScore | Exception]:
        """The scheduler's batch runner for score jobs (worker thread): one step alone through
        ``engine.score``, several sessions' steps together through ``engine.score_many``."""
        results: list[StepScore | Exception] = [
            ModelError("the step was not scored") for _ in items
        ]
        ready: list[tuple[int, StepInput]] = [(i, it.job.input) for i, it in enumerate(items)]
        if len(ready) == 1:
            i, step = ready[0]
            try:
                results[i] = self.engine.score(step, items[i].progress, cancels[i])
            except Exception as exc:
                results[i] = _score_error(items[i].job, exc)
        elif ready:
            try:
                scores = self.engine.score_many(
                    [step for _, step in ready],
                    [items[i].progress for i, _ in ready],
                    [cancels[i] for i, _ in ready],
                )
            except Exception as exc:  # the shared call itself failed: every member's error
                scores = [exc] * len(ready)
            for (i, _), res in zip(ready, scores, strict=True):
                results[i] = _score_error(items[i].job, res) if isinstance(res, Exception) else res
        return results

    def _progress(self, job: RunScore, cand: int, sample: int, delta: str) -> None:
        frame = dump(
            ScoreProgress(
                session_id=job.session_id,
                request=job.request_id,
                candidate=cand,
                sample=sample,
                delta=delta,
            )
        )
        targets = {c.id for c in self.hub.targets(job.session_id, job.owner)} | {job.conn}
        for cid in targets:
            self.hub.send(cid, frame, reply=False)  # progress may be dropped, never a reply

    def _remote_stats(self) -> RemoteEngineStats | None:
        """The remote model server's health (the openai backends probe it, at most every few
        seconds); None for an engine in this process."""
        try:
            return remote_stats(self.engine.health())
        except Exception:  # a failing probe must not stop stats
            log.debug("no remote stats", exc_info=True)
            return None

    async def stats_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.stats_interval_s)
            subs = list(self.hub.subscribers())
            if not subs:
                continue
            device = await loop.run_in_executor(None, device_stats)
            remote = await loop.run_in_executor(None, self._remote_stats)
            snap = self.stats.snapshot(
                queue_depth=self.scheduler.depth,
                in_flight=self.scheduler.in_flight,
                engine_stats=self.engine.stats,
                sessions_active=self.core.active,
                connections=len(self.hub.conns),
                pending_approvals=len(self.core.approvals),
                device=device,
                otlp=self.telemetry.stats() if self.telemetry is not None else None,
                judge=(self.engine.backend_name, self.engine.model_id),
                remote=remote,
            )
            frame = dump(snap)
            for c in subs:
                c.send(frame)
