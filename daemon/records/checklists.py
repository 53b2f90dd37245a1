"""A session's checklist: the ``checklists`` row (the latest one replaces the one before)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import ClassVar

from webshepherd.daemon.records.kind import Record, RecordKind, models_json
from webshepherd.protocol.common import ChecklistItem
from webshepherd.protocol.replies import Checklist

TABLES = """
CREATE TABLE IF NOT EXISTS checklists (
    session_id TEXT PRIMARY KEY REFERENCES sessions(session_id),
    source TEXT NOT NULL,
    text TEXT NOT NULL,
    items TEXT NOT NULL             -- JSON list of ChecklistItem
);
"""


@dataclass(frozen=True)
class ChecklistRecord(Record):
    op: ClassVar[str] = "checklist"
    event: Checklist


def _write(db: sqlite3.Connection, r: ChecklistRecord) -> None:
    e = r.event
    db.execute(
        "INSERT OR REPLACE INTO checklists VALUES (?, ?, ?, ?)",
        (e.session_id, e.source, e.text, models_json(e.items)),
    )


KIND = RecordKind(ChecklistRecord, _write, TABLES)
KINDS = (KIND,)


def read(db: sqlite3.Connection, session_id: str) -> Checklist | None:
    """The session's checklist, as the ``checklist`` event carried it."""
    row = db.execute("SELECT * FROM checklists WHERE session_id = ?", (session_id,)).fetchone()
    if row is None:
        return None
    items = [ChecklistItem.model_validate(i) for i in json.loads(row["items"])]
    return Checklist(session_id=session_id, source=row["source"], items=items, text=row["text"])
