"""Reads from the recording: session lists, whole histories, and state to resume a session."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from webshepherd.daemon.recorder.store import Recorder
from webshepherd.daemon.recorder.timeline import Timeline, read_items, read_timeline
from webshepherd.daemon.records import StoredScore, StoredSession
from webshepherd.protocol.common import AgentInfo, ChecklistItem, SessionSummary, Turn
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.progress import item_levels
from webshepherd.protocol.replies import Checklist


def _summary(row: sqlite3.Row) -> SessionSummary:
    return SessionSummary(
        session_id=row["session_id"],
        intent=row["intent"],
        start_url=row["start_url"],
        agent=AgentInfo.model_validate_json(row["agent"]),
        source=row["source"],
        state="ended" if row["ended_at"] is not None else "running",
        outcome=row["outcome"],
        steps=row["steps_taken"],
        latest_reward=row["latest_reward"],
        created_at=row["created_at"],
        ended_at=row["ended_at"],
    )


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
        row = self.db.execute(
            "SELECT COUNT(DISTINCT step) FROM score_requests WHERE session_id = ?", (session_id,)
        ).fetchone()
        return int(row[0])

    def summary(self, session_id: str) -> SessionSummary | None:
        row = self.db.execute(_SESSIONS + " WHERE session_id = ?", (session_id,)).fetchone()
        return _summary(row) if row else None

    def checklist(self, session_id: str) -> Checklist | None:
        row = self.db.execute(
            "SELECT * FROM checklists WHERE session_id = ?", (session_id,)
        ).fetchone()
        if row is None:
            return None
        items = [ChecklistItem.model_validate(i) for i in json.loads(row["items"])]
        return Checklist(session_id=session_id, source=row["source"], items=items, text=row["text"])

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
        rows = self.db.execute(
            "SELECT seq, body FROM events WHERE session_id = ? ORDER BY seq LIMIT -1 OFFSET ?",
            (session_id, after),
        )
        out: list[dict[str, Any]] = []
        size = 0
        for n, row in enumerate(rows):
            e = json.loads(row["body"])
            extra = 0
            if e.get("type") == "observed" and "axtree" not in e:
                tree = self._tree(session_id, e.get("step", -1))
                e["axtree"] = tree
                extra = _json_size(tree)
            size += len(row["body"]) + extra
            if out and max_bytes is not None and size > max_bytes:
                return out, after + n
            out.append(e)
        return out, None

    def _tree(self, session_id: str, step: int) -> str:
        row = self.db.execute(
            "SELECT axtree FROM observations WHERE session_id = ? AND step = ? "
            "ORDER BY id DESC LIMIT 1",
            (session_id, step),
        ).fetchone()
        return row["axtree"] if row else ""

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
        rows = self.db.execute(
            "SELECT request_id, session_id FROM approvals WHERE decision IS NULL ORDER BY rowid"
        )
        return [(r["request_id"], r["session_id"]) for r in rows]

    def stored_session(self, session_id: str) -> StoredSession | None:
        """What the session machine needs to continue ``session_id`` after a restart."""
        row = self.db.execute(
            "SELECT * FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        if row is None:
            return None
        obs = self.db.execute(
            "SELECT step, url, axtree FROM observations WHERE session_id = ? "
            "ORDER BY id DESC LIMIT 1",
            (session_id,),
        ).fetchone()
        actions = tuple(
            (a["step"], Turn(thought=a["thought"] or "", action=a["action"]))
            for a in self.db.execute(
                "SELECT step, action, thought FROM actions WHERE session_id = ? ORDER BY id",
                (session_id,),
            )
        )
        scores = []
        for s in self.db.execute(
            "SELECT id, step FROM score_requests WHERE session_id = ? ORDER BY id", (session_id,)
        ).fetchall():
            cands = self.db.execute(
                "SELECT action, reward, items FROM candidate_results WHERE score_id = ? "
                "ORDER BY idx",
                (s["id"],),
            ).fetchall()
            scores.append(
                StoredScore(
                    s["step"],
                    tuple(
                        (
                            c["action"],
                            c["reward"],
                            _levels(c["items"]) if c["items"] != "[]" else None,
                        )
                        for c in cands
                    ),
                )
            )
        tree = tuple(
            (n["node"], n["parent"], n["depth"], n["action"])
            for n in self.db.execute(
                "SELECT node, parent, depth, action FROM tree_nodes WHERE id IN "
                "(SELECT MIN(id) FROM tree_nodes WHERE session_id = ? GROUP BY node) "
                "ORDER BY node",
                (session_id,),
            )
        )
        mode, holds = self._mode(session_id)
        return StoredSession(
            session_id=session_id,
            intent=row["intent"],
            start_url=row["start_url"],
            agent=AgentInfo.model_validate_json(row["agent"]),
            source=row["source"],
            created_at=row["created_at"],
            latest_reward=row["latest_reward"],
            outcome=row["outcome"],
            answer=row["answer"],
            ended_at=row["ended_at"],
            checklist=self.checklist(session_id),
            observation=(obs["step"], obs["url"], obs["axtree"]) if obs is not None else None,
            actions=actions,
            scores=tuple(scores),
            tree=tree,
            mode=mode,
            holds=holds,
        )

    def _mode(self, session_id: str) -> tuple[Any, Any]:
        """The session's latest recorded mode and its start's ``holds`` (events log)."""
        mode = holds = None
        for e in self.db.execute(
            "SELECT type, body FROM events WHERE session_id = ? "
            "AND type IN ('session.started', 'mode.set') ORDER BY seq",
            (session_id,),
        ):
            body = json.loads(e["body"])
            mode = body.get("mode") or mode
            if e["type"] == "session.started":
                holds = body.get("holds")
        return mode, holds


def _levels(items_json: str) -> dict[int, int]:
    """A recorded candidate's checklist item levels (its ``items`` column)."""
    return item_levels(read_items(items_json))
