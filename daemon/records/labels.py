"""Ground truth for scored candidates: one ``labels`` row per ``label`` request (a later label
of the same candidate wins on read)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import ClassVar

from webshepherd.daemon.records.kind import Record, RecordKind, insert, table_rows, to_json
from webshepherd.protocol.requests import Label

TABLES = """
CREATE TABLE IF NOT EXISTS labels (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(session_id),
    step INTEGER NOT NULL,
    action TEXT NOT NULL,           -- the scored candidate's action
    items TEXT NOT NULL,            -- JSON list: yes / in_progress / no per checklist item
    source TEXT NOT NULL,           -- environment / person: who knew the truth
    labelled_by TEXT NOT NULL,      -- the connection's role and name
    note TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS labels_by_session ON labels(session_id, step);
"""


@dataclass(frozen=True)
class LabelRecord(Record):
    """Ground truth for a scored candidate: the ``label`` request, who gave it, and when."""

    op: ClassVar[str] = "label"
    label: Label
    by: str
    created_at: float


def _write(db: sqlite3.Connection, r: LabelRecord) -> None:
    x = r.label
    row: dict[str, object] = {"session_id": x.session_id, "step": x.step, "action": x.action}
    row |= {"items": to_json(x.items), "source": x.source, "labelled_by": r.by}
    insert(db, "labels", row | {"note": x.note, "created_at": r.created_at})


KIND = RecordKind(LabelRecord, _write, TABLES)
KINDS = (KIND,)


@dataclass
class TruthLabel:
    """Ground truth for one candidate: each checklist item's label after its action, and who
    knew it (``environment`` or ``person``)."""

    action: str
    items: list[str]  # yes / in_progress / no, in the checklist's order
    source: str
    by: str
    note: str | None
    created_at: float


def read(db: sqlite3.Connection, session_id: str) -> list[tuple[int, TruthLabel]]:
    """The session's labels as ``(step, label)`` in recording order (none in a recording made
    before labels were kept)."""
    return [
        (
            r["step"],
            TruthLabel(
                r["action"],
                json.loads(r["items"]),
                r["source"],
                r["labelled_by"],
                r["note"],
                r["created_at"],
            ),
        )
        for r in table_rows(
            db, "SELECT * FROM labels WHERE session_id = ? ORDER BY id", (session_id,)
        )
    ]
