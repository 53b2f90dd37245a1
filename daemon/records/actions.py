"""Executed actions: one ``actions`` row each, in recording order."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import ClassVar

from webshepherd.daemon.records.kind import Record, RecordKind, insert
from webshepherd.protocol.common import Turn
from webshepherd.protocol.replies import ActionEvent

TABLES = """
CREATE TABLE IF NOT EXISTS actions (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(session_id),
    step INTEGER NOT NULL,
    action TEXT NOT NULL,
    thought TEXT,
    source TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS actions_by_session ON actions(session_id, id);
"""


@dataclass(frozen=True)
class ActionRecord(Record):
    op: ClassVar[str] = "action"
    event: ActionEvent
    created_at: float


def _write(db: sqlite3.Connection, r: ActionRecord) -> None:
    e = r.event
    row: dict[str, object] = {
        "session_id": e.session_id,
        "step": e.step,
        "action": e.action,
        "thought": e.thought,
    }
    insert(db, "actions", row | {"source": e.source, "created_at": r.created_at})


KIND = RecordKind(ActionRecord, _write, TABLES)
KINDS = (KIND,)


@dataclass
class Executed:
    action: str
    thought: str | None
    source: str
    created_at: float
    step: int = 0


def read(db: sqlite3.Connection, session_id: str) -> list[Executed]:
    """The executed actions in recording order."""
    return [
        Executed(x["action"], x["thought"], x["source"], x["created_at"], x["step"])
        for x in db.execute("SELECT * FROM actions WHERE session_id = ? ORDER BY id", (session_id,))
    ]


def turns(db: sqlite3.Connection, session_id: str) -> tuple[tuple[int, Turn], ...]:
    """The executed actions as ``(step, turn)`` in order (the machine's history)."""
    return tuple(
        (a["step"], Turn(thought=a["thought"] or "", action=a["action"]))
        for a in db.execute(
            "SELECT step, action, thought FROM actions WHERE session_id = ? ORDER BY id",
            (session_id,),
        )
    )
