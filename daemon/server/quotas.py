"""Quotas: what one connection may ask of the daemon, and how much one session may record.

Per connection, in any 60 s: at most ``session_starts`` session starts and ``observations``
observations (``observe``, or one inline in ``session.start`` or ``score``); at any moment at
most ``model_jobs`` model jobs of its own queued or running (the scheduler counts them). Per
session: at most ``session_bytes`` recorded (AX trees and texts counted by characters,
screenshots by bytes). Past a limit the request is answered ``overloaded`` with what was
exceeded and the setting that raises it; nothing of it is recorded. 0 turns a limit off.

Sans-I/O: the server asks :meth:`Quotas.admit` before a request reaches the session machine.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any

from webshepherd.daemon.config import MIB, QuotaLimits
from webshepherd.protocol import requests as rq
from webshepherd.protocol.common import Observation
from webshepherd.protocol.errors import OverloadedError

WINDOW_S = 60.0


class _Window:
    """Times of the latest events, at most ``limit`` of them within ``WINDOW_S``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.times: deque[float] = deque()

    def room(self, now: float) -> bool:
        while self.times and now - self.times[0] >= WINDOW_S:
            self.times.popleft()
        return not self.limit or len(self.times) < self.limit

    def take(self, now: float) -> None:
        if self.limit:
            self.times.append(now)


def observation_size(obs: Observation) -> int:
    """What an observation adds to its session's record (the screenshot as its bytes)."""
    shot = obs.screenshot.data if obs.screenshot is not None else None
    boxes = 40 * len(obs.boxes) if obs.boxes else 0
    return len(obs.url) + len(obs.axtree) + (len(shot) * 3 // 4 if shot else 0) + boxes


def request_size(msg: object) -> int:
    """What a request adds to its session's record (0 for what records nothing)."""
    if isinstance(msg, rq.Observe):
        return observation_size(msg.observation())
    if isinstance(msg, rq.Score):
        texts = sum(len(c.thought) + len(c.action) for c in msg.candidates)
        return texts + (observation_size(msg.observation) if msg.observation else 0)
    if isinstance(msg, rq.Action):
        return len(msg.action) + len(msg.thought or "")
    if isinstance(msg, rq.SessionEnd):
        return len(msg.answer or "")
    if isinstance(msg, rq.TreeNode):
        return sum(len(t or "") for t in (msg.action, msg.thought, msg.url, msg.error))
    return 0


class Quotas:
    """The daemon's quotas: per-connection windows and per-session recorded sizes."""

    def __init__(self, limits: QuotaLimits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.clock = clock
        self._starts: dict[int, _Window] = {}
        self._observations: dict[int, _Window] = {}
        self._recorded: dict[str, int] = {}
        self._jobs: dict[int, int] = {}

    def needs_size(self, msg: object) -> str | None:
        """The session whose recorded size :meth:`set_recorded` must give before ``msg`` is
        admitted (read from the recording, on a thread), else None."""
        sid = getattr(msg, "session_id", None)
        if not isinstance(sid, str) or not self.limits.session_bytes or sid in self._recorded:
            return None
        return sid if request_size(msg) else None

    def set_recorded(self, session_id: str, size: int) -> None:
        self._recorded.setdefault(session_id, size)

    def admit(self, conn: int, msg: object, *, model_jobs: int = 0) -> None:
        """Count ``msg`` of connection ``conn`` against its quotas, or raise
        ``OverloadedError`` (counting nothing). ``model_jobs``: the connection's model jobs
        queued or running now (its checklist generations included)."""
        now = self.clock()
        lim = self.limits
        starts = observations = False
        if isinstance(msg, rq.SessionStart):
            starts = True
            observations = msg.observation is not None
            if msg.checklist is None:
                self._check_jobs(model_jobs)
        elif isinstance(msg, rq.Observe):
            observations = True
        elif isinstance(msg, rq.Score):
            observations = msg.observation is not None
            self._check_jobs(model_jobs)
        if starts and not self._window(self._starts, conn).room(now):
            raise OverloadedError(
                f"this connection started {lim.session_starts} sessions in the last "
                f"{WINDOW_S:g} s, its limit (serve --max-session-starts); retry later"
            )
        if observations and not self._window(self._observations, conn).room(now):
            raise OverloadedError(
                f"this connection sent {lim.observations} observations in the last "
                f"{WINDOW_S:g} s, its limit (serve --max-observations); retry later"
            )
        sid = getattr(msg, "session_id", None)
        size = request_size(msg)
        if isinstance(sid, str) and size and lim.session_bytes:
            self._recorded.setdefault(sid, 0)
            if self._recorded[sid] + size > lim.session_bytes:
                raise OverloadedError(
                    f"session {sid!r} has recorded {self._recorded[sid] / MIB:.1f} MiB; "
                    f"{size / MIB:.1f} MiB more is past its limit of "
                    f"{lim.session_bytes / MIB:.0f} MiB (serve --max-session-mib): end it "
                    "and start a new session",
                    retryable=False,
                )
            self._recorded[sid] += size
        if starts:
            self._starts[conn].take(now)
        if observations:
            self._observations[conn].take(now)

    def jobs(self, conn: int) -> int:
        """Score jobs of ``conn`` handed to the engine and not finished."""
        return self._jobs.get(conn, 0)

    def counted(self, conn: int, work: Coroutine[Any, Any, None]) -> Coroutine[Any, Any, None]:
        """``work`` (a score job of ``conn``) counted from now until it ends."""
        self._jobs[conn] = self._jobs.get(conn, 0) + 1

        async def run() -> None:
            try:
                await work
            finally:
                left = self._jobs.get(conn, 0) - 1
                if left > 0:
                    self._jobs[conn] = left
                else:
                    self._jobs.pop(conn, None)

        return run()

    def forget_session(self, session_id: str) -> None:
        self._recorded.pop(session_id, None)

    def forget_connection(self, conn: int) -> None:
        self._starts.pop(conn, None)
        self._observations.pop(conn, None)
        self._jobs.pop(conn, None)

    def _check_jobs(self, jobs: int) -> None:
        if self.limits.model_jobs and jobs >= self.limits.model_jobs:
            raise OverloadedError(
                f"this connection has {jobs} model jobs queued or running, its limit "
                "(serve --max-model-jobs); wait for a reply, then retry"
            )

    def _window(self, windows: dict[int, _Window], conn: int) -> _Window:
        w = windows.get(conn)
        if w is None:
            lim = self.limits
            w = windows[conn] = _Window(
                lim.session_starts if windows is self._starts else lim.observations
            )
        return w
