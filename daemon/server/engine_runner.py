"""The daemon's engine work: checklist and scoring jobs on the scheduler, score progress
frames, and the periodic stats frames. :class:`EngineRunner` is owned by
:class:`~.server.DaemonServer`, which hands it its dependencies and three callbacks. It keeps
the engine side of a session's checklist (a generation under way and its result, which the
worker thread adds to the ``StepInput`` of a score job asked for before it existed); the
session machine keeps the checklist once it is recorded. What an engine raises reaches the
requester as engine/failures.py's ``model_error`` makes it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from webshepherd.daemon.engine.failures import model_error
from webshepherd.daemon.engine.types import (
    CandidateScore,
    ParsedChecklist,
    StepInput,
    StepScore,
)
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
    """A score job as the scheduler batches it: the request, the checklist its step runs with
    when the machine did not know one (the generation's, set by the worker thread), its
    progress sink."""

    job: RunScore
    checklist: concurrent.futures.Future[ParsedChecklist] | None
    progress: Callable[[int, int, str], None]


def _score_error(job: RunScore, exc: Exception) -> WebShepherdError:
    """A scoring failure as the requester sees it (no internals for unexpected ones)."""
    return model_error(exc, "the model failed on this request", context=job.request_id)


NO_CHECKLIST = (
    "the judge wrote no checklist it could parse for this task: pass the task's own with "
    "checklist=… (the session's next step asks the judge again)"
)


def no_checklist(step: StepInput, slot: concurrent.futures.Future[ParsedChecklist]) -> StepScore:
    """A step the judge cannot score for want of a checklist, as a result: every candidate's
    reward None, ``feedback`` the reason (and the generation's own error, when it failed)."""
    failed = slot.exception() if slot.done() else None
    why = getattr(failed, "message", None) or (str(failed) if failed is not None else "")
    reason = f"{NO_CHECKLIST}: {why}" if why else NO_CHECKLIST
    unscored = tuple(
        CandidateScore(i, None, (), reason, (), parsed_samples=0)
        for i in range(len(step.candidates))
    )
    return StepScore(unscored, prompt_tokens=0, generated_tokens=0, prefix_shared=False)


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
        # each generation's checklist, set by the worker thread as soon as it exists so that
        # a score job queued behind it reads it; dropped once recorded or failed
        self._checklists: dict[str, concurrent.futures.Future[ParsedChecklist]] = {}
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
        """Queue the generation of a session's checklist now (before any score job queued
        after this call), unless one is under way or done; its result is recorded and
        published when it comes. A generation that fails or cannot be queued is tried again
        by the session's next score (the machine asks again while it knows no checklist)."""
        sid = job.session_id
        if sid in self._checklists:
            return
        engine = self.engine
        slot: concurrent.futures.Future[ParsedChecklist] = concurrent.futures.Future()

        def work(cancel: threading.Event) -> ParsedChecklist:
            try:
                parsed = engine.make_checklist(job.intent, job.start_url, job.axtree)
            except BaseException as exc:  # the step queued behind it reads why (no_checklist)
                slot.set_exception(exc)
                raise
            slot.set_result(parsed)  # visible to the next job of this session
            return parsed

        try:
            queued = self.scheduler.enqueue(sid, None, work)
        except WebShepherdError as exc:
            log.warning("checklist of session %s not queued: %s", sid, exc.message)
            return
        self.generating[sid] = job.owner
        self._checklists[sid] = slot
        self._engaged[sid] += 1  # until _checklist_done has recorded the result
        self._spawn(None, self._checklist_done(job, queued))

    async def _checklist_done(self, job: RunChecklist, queued: Job[ParsedChecklist]) -> None:
        with self._engage(job.session_id, held=True):
            try:
                await self._checklist_result(job, queued)
            finally:  # recorded (the machine knows it now), or to be tried again
                self._checklists.pop(job.session_id, None)

    async def _checklist_result(self, job: RunChecklist, queued: Job[ParsedChecklist]) -> None:
        sid = job.session_id
        try:
            fin = await self.scheduler.wait(queued)
        except Exception as exc:
            err = model_error(exc, "the model failed to make the checklist", context=sid)
            if sid not in self._unparsed_logged:  # once a session; its next step tries again
                self._unparsed_logged.add(sid)
                log.warning("session %s has no checklist: %s", sid, err.message)
            if job.owner is not None:
                self.hub.send(job.owner, dump(Error(code=err.code, message=err.message)))
            return
        finally:
            self.generating.pop(sid, None)
        await self._step(sid, lambda: self.core.checklist_ready(sid, fin.value, "generated"))

    async def score(self, job: RunScore) -> None:
        with self._engage(job.session_id):
            await self._score(job)

    async def _score(self, job: RunScore) -> None:
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        checklist = self._checklist_of(job)
        progress = CoalescedProgress(
            loop, lambda c, k, d: self._progress(job, c, k, d), PROGRESS_INTERVAL_S
        )
        try:
            fin = await self.scheduler.run_batched(
                job.session_id, job.conn, _ScoreItem(job, checklist, progress.add), self._score_many
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

    def _checklist_of(self, job: RunScore) -> concurrent.futures.Future[ParsedChecklist] | None:
        """None when the job's step has its checklist (the machine knew it); else the one the
        session's generation sets (the machine queued it before this job), a future never
        set when no generation is under way."""
        if job.input.checklist is not None:
            return None
        return self._checklists.get(job.session_id, concurrent.futures.Future())

    def _score_many(
        self, items: Sequence[_ScoreItem], cancels: Sequence[threading.Event]
    ) -> list[StepScore | Exception]:
        """The scheduler's batch runner for score jobs (worker thread): one step alone through
        ``engine.score``, several sessions' steps together through ``engine.score_many``."""
        results: list[StepScore | Exception] = [
            ModelError("the step was not scored") for _ in items
        ]
        ready: list[tuple[int, StepInput]] = []
        for i, it in enumerate(items):
            judged, slot = it.job.input, it.checklist
            if slot is not None:  # the checklist is added here, as the step runs
                if not slot.done() or slot.exception() is not None:
                    results[i] = no_checklist(judged, slot)
                    continue
                judged = replace(judged, checklist=slot.result())
            ready.append((i, judged))
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
