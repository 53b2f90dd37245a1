"""A session's start, end and scorer: the ``sessions`` row and the scorer tables."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any, ClassVar

from webshepherd.daemon.records.kind import Record, RecordKind, insert, table_rows, to_json
from webshepherd.protocol.common import EnvironmentInfo
from webshepherd.protocol.replies import SessionEnded, SessionStarted

TABLES = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    intent TEXT NOT NULL,
    start_url TEXT,
    agent TEXT NOT NULL,            -- JSON AgentInfo
    source TEXT NOT NULL,
    created_at REAL NOT NULL,
    steps INTEGER NOT NULL DEFAULT 0,
    latest_reward REAL,
    outcome TEXT,
    answer TEXT,
    ended_at REAL
);
CREATE TABLE IF NOT EXISTS session_scorers (
    session_id TEXT PRIMARY KEY REFERENCES sessions(session_id),
    model TEXT NOT NULL,            -- the model that scored the session (as serve loaded it)
    backend TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS session_scorer_settings (
    session_id TEXT PRIMARY KEY REFERENCES sessions(session_id),
    settings TEXT NOT NULL          -- JSON: prompt style, temperature, sampling, context, ...
);
CREATE TABLE IF NOT EXISTS session_environments (
    session_id TEXT PRIMARY KEY REFERENCES sessions(session_id),
    environment TEXT NOT NULL       -- JSON EnvironmentInfo: what resets it (session.start's)
);
CREATE INDEX IF NOT EXISTS sessions_by_time ON sessions(created_at);
"""


@dataclass(frozen=True)
class SessionStartedRecord(Record):
    op: ClassVar[str] = "session_started"
    event: SessionStarted
    created_at: float


@dataclass(frozen=True)
class SessionEndedRecord(Record):
    op: ClassVar[str] = "session_ended"
    event: SessionEnded
    ended_at: float


@dataclass(frozen=True)
class ScorerRecord(Record):
    """Which model and backend scored a session, with the judging settings (prompt style,
    temperature, the checkpoint's sampling settings…; written with its start)."""

    op: ClassVar[str] = "scorer"
    session_id: str
    model: str
    backend: str
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvironmentRecord(Record):
    """What resets the session's environment (``session.start``'s ``environment``; written
    with its start, for replays)."""

    op: ClassVar[str] = "environment"
    session_id: str
    environment: EnvironmentInfo


def _started(db: sqlite3.Connection, r: SessionStartedRecord) -> None:
    e = r.event
    agent = e.agent.model_dump() if e.agent is not None else {}
    row: dict[str, object] = {
        "session_id": e.session_id,
        "intent": e.intent,
        "start_url": e.start_url,
    }
    row |= {"agent": to_json(agent), "source": e.source, "created_at": r.created_at}
    insert(db, "sessions", row)


def _ended(db: sqlite3.Connection, r: SessionEndedRecord) -> None:
    e = r.event
    db.execute(
        "UPDATE sessions SET outcome = ?, answer = ?, ended_at = ? WHERE session_id = ?",
        (e.outcome, e.answer, r.ended_at, e.session_id),
    )


def _scorer(db: sqlite3.Connection, r: ScorerRecord) -> None:
    """The model and backend that score the session, and their judging settings (kept for
    reports)."""
    db.execute(
        "INSERT OR REPLACE INTO session_scorers VALUES (?, ?, ?)",
        (r.session_id, r.model, r.backend),
    )
    db.execute(
        "INSERT OR REPLACE INTO session_scorer_settings VALUES (?, ?)",
        (r.session_id, json.dumps(r.settings or {}, sort_keys=True)),
    )


def _environment(db: sqlite3.Connection, r: EnvironmentRecord) -> None:
    db.execute(
        "INSERT OR REPLACE INTO session_environments VALUES (?, ?)",
        (r.session_id, r.environment.model_dump_json()),
    )


STARTED = RecordKind(SessionStartedRecord, _started, TABLES)
ENDED = RecordKind(SessionEndedRecord, _ended)
SCORER = RecordKind(ScorerRecord, _scorer)
ENVIRONMENT = RecordKind(EnvironmentRecord, _environment)
KINDS = (STARTED, ENDED, SCORER, ENVIRONMENT)


def environment(db: sqlite3.Connection, session_id: str) -> EnvironmentInfo | None:
    """What resets the session's environment, as its start recorded it (None: nothing, or a
    recording made before environments were kept)."""
    got = table_rows(
        db, "SELECT environment FROM session_environments WHERE session_id = ?", (session_id,)
    )
    return EnvironmentInfo.model_validate_json(got[0]["environment"]) if got else None


def row(db: sqlite3.Connection, session_id: str) -> sqlite3.Row | None:
    """The session's ``sessions`` row (None: no such session)."""
    got: sqlite3.Row | None = db.execute(
        "SELECT * FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    return got


def answer(db: sqlite3.Connection, session_id: str) -> str | None:
    """The answer the session ended with."""
    got = db.execute("SELECT answer FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    return got["answer"] if got else None


@dataclass(frozen=True)
class Scorer:
    """The model and backend that scored a session and its judging settings (None and empty
    in a recording made before each was kept)."""

    model: str | None
    backend: str | None
    settings: dict[str, Any]


def scorer(db: sqlite3.Connection, session_id: str) -> Scorer:
    got = table_rows(
        db, "SELECT model, backend FROM session_scorers WHERE session_id = ?", (session_id,)
    )
    kept = table_rows(
        db, "SELECT settings FROM session_scorer_settings WHERE session_id = ?", (session_id,)
    )
    return Scorer(
        got[0]["model"] if got else None,
        got[0]["backend"] if got else None,
        json.loads(kept[0]["settings"]) if kept else {},
    )
