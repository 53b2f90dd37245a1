"""Reads from the recording: session lists, whole histories, and state to resume a session.
Each table is read by its kind's module (``daemon/records``); the SQL here is what spans
tables (the session list with its step count, a session's recorded size, the observations
and actions in recording order)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from webshepherd.daemon.recorder.store import Recorder
from webshepherd.daemon.recorder.timeline import Timeline, read_timeline
from webshepherd.daemon.records import (
    actions,
    approvals,
    checklists,
    events,
    observations,
    scores,
    sessions,
    tree_nodes,
)
from webshepherd.daemon.records.stored import StoredSession
from webshepherd.protocol.common import AgentInfo, SessionHeader, SessionState, SessionSummary
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.replies import Checklist


def _header(row: sqlite3.Row) -> SessionHeader:
    """A ``sessions`` row's header."""
    return SessionHeader(
        session_id=row["session_id"],
        intent=row["intent"],
        start_url=row["start_url"],
        agent=AgentInfo.model_validate_json(row["agent"]),
        source=row["source"],
        outcome=row["outcome"],
        latest_reward=row["latest_reward"],
        created_at=row["created_at"],
        ended_at=row["ended_at"],
    )


def _summary(row: sqlite3.Row) -> SessionSummary:
    state: SessionState = "ended" if row["ended_at"] is not None else "running"
    return _header(row).summary(state, row["steps_taken"])


#: The sessions with their step count (protocol/steps.py: the distinct steps scored or acted
#: at; the ``steps`` column, once the observations' count, is no longer read).
_SESSIONS = (
    "SELECT *, (SELECT COUNT(*) FROM (SELECT step FROM score_requests AS r "
    "WHERE r.session_id = s.session_id UNION SELECT step FROM actions AS a "
    "WHERE a.session_id = s.session_id)) AS steps_taken FROM sessions AS s"
)


def _json_size(text: str) -> int:
    """About the length of ``text`` as a JSON string (the characters JSON escapes)."""
    return len(text) + 2 + sum(text.count(c) for c in '\n\t"\\')


class History:
    """Read side of :class:`Recorder`: its own connection (WAL: reads never wait for the
    writer thread, and see every committed write)."""

    def __init__(self, recorder: Recorder):
        self.db = sqlite3.connect(str(recorder.path), check_same_thread=False)
        self.db.row_factory = sqlite3.Row

    @classmethod
    def open(cls, db_path: Path) -> History:
        """Read a recording from disk (read-only; offline tools such as ``report``)."""
        if not db_path.exists():
            raise WebShepherdError(
                f"no recording at {db_path} (pass --data-dir, or run the daemon first)"
            )
        self = cls.__new__(cls)
        self.db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        return self

    def close(self) -> None:
        self.db.close()

    def recorded_size(self, session_id: str) -> int:
        """What a session's observations, actions and tree nodes hold: URLs, AX trees and
        texts by characters, screenshots by bytes (the daemon's per-session quota counts the
        same)."""
        row = self.db.execute(
            "SELECT (SELECT IFNULL(SUM(LENGTH(url) + LENGTH(axtree) + IFNULL(LENGTH(screenshot), "
            "0)), 0) FROM observations WHERE session_id = ?1) + (SELECT IFNULL(SUM(LENGTH(action)"
            " + IFNULL(LENGTH(thought), 0)), 0) FROM actions WHERE session_id = ?1) + (SELECT "
            "IFNULL(SUM(IFNULL(LENGTH(action), 0) + IFNULL(LENGTH(thought), 0) + IFNULL(LENGTH("
            "url), 0) + IFNULL(LENGTH(error), 0)), 0) FROM tree_nodes WHERE session_id = ?1)",
            (session_id,),
        ).fetchone()
        return int(row[0])

    def list_sessions(self, limit: int = 100) -> list[SessionSummary]:
        rows = self.db.execute(
            _SESSIONS + " ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,)
        ).fetchall()
        return [_summary(r) for r in rows]

    def sessions(
        self, ids: Sequence[str] | None = None, since: float | None = None
    ) -> list[SessionSummary]:
        """The recorded sessions, oldest first: all, or those of ``ids`` (each must exist),
        or those started at ``since`` or later (offline tools)."""
        rows = self.db.execute(_SESSIONS + " ORDER BY created_at, rowid").fetchall()
        if ids:
            known = {r["session_id"] for r in rows}
            missing = [i for i in ids if i not in known]
            if missing:
                raise WebShepherdError(f"--sessions: no recorded session {', '.join(missing)}")
            rows = [r for r in rows if r["session_id"] in set(ids)]
        if since is not None:
            rows = [r for r in rows if r["created_at"] >= since]
        return [_summary(r) for r in rows]

    def scored_steps(self, session_id: str) -> int:
        """How many of the session's steps were scored at least once."""
        return scores.scored_steps(self.db, session_id)

    def summary(self, session_id: str) -> SessionSummary | None:
        row = self.db.execute(_SESSIONS + " WHERE session_id = ?", (session_id,)).fetchone()
        return _summary(row) if row else None

    def checklist(self, session_id: str) -> Checklist | None:
        return checklists.read(self.db, session_id)

    def timeline(self, session_id: str) -> Timeline | None:
        """The session step by step (observations, scorings, approvals, actions, signals)."""
        summary = self.summary(session_id)
        if summary is None:
            return None
        return read_timeline(self.db, summary, self.checklist(session_id))

    def events(self, session_id: str) -> list[dict[str, Any]]:
        """All of the session's events (:meth:`page` without a size bound)."""
        return self.page(session_id, 0, None)[0]

    def page(
        self, session_id: str, after: int, max_bytes: int | None
    ) -> tuple[list[dict[str, Any]], int | None]:
        """The session's events from number ``after`` on, as subscribers got them (AX trees
        put back from ``observations``, where they are stored once), as many as fit about
        ``max_bytes`` of JSON (at least one), and the number to go on from (None: the end)."""
        out: list[dict[str, Any]] = []
        size = 0
        for n, body in enumerate(events.bodies_from(self.db, session_id, after)):
            e = json.loads(body)
            extra = 0
            if e.get("type") == "observed" and "axtree" not in e:
                tree = observations.axtree_at(self.db, session_id, e.get("step", -1))
                e["axtree"] = tree
                extra = _json_size(tree)
            size += len(body) + extra
            if out and max_bytes is not None and size > max_bytes:
                return out, after + n
            out.append(e)
        return out, None

    def signal_history(self, session_id: str) -> Iterator[tuple[str, str | None, str | None, int]]:
        """Observations ``("observed", url, axtree, step)`` and actions ``("action", action,
        thought, step)`` of a session in the order they were recorded (for
        SignalBook.rebuild)."""
        rows = self.db.execute(
            "SELECT 'observed' AS kind, url AS a, axtree AS b, step, created_at, id "
            "FROM observations WHERE session_id = ? UNION ALL "
            "SELECT 'action', action, thought, step, created_at, id FROM actions "
            "WHERE session_id = ? ORDER BY created_at, kind DESC, id",
            (session_id, session_id),
        )
        for r in rows:
            yield r["kind"], r["a"], r["b"], r["step"]

    def open_approvals(self) -> list[tuple[str, str]]:
        """``(request_id, session_id)`` of the approval requests nobody decided."""
        return approvals.open_requests(self.db)

    def approval_ids(self) -> list[str]:
        """Every recorded approval request id (new ones are numbered after them)."""
        return approvals.request_ids(self.db)

    def stored_session(self, session_id: str) -> StoredSession | None:
        """What the session machine needs to continue ``session_id`` after a restart."""
        row = sessions.row(self.db, session_id)
        if row is None:
            return None
        mode, holds = events.mode(self.db, session_id)
        return StoredSession(
            header=_header(row),
            answer=row["answer"],
            checklist=self.checklist(session_id),
            observation=observations.latest(self.db, session_id),
            actions=actions.turns(self.db, session_id),
            scores=scores.stored(self.db, session_id),
            tree=tree_nodes.stored(self.db, session_id),
            mode=mode,
            holds=holds,
        )
