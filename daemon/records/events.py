"""The session's event log: every published event, numbered, as a subscriber received it
(big fields by reference to the table that holds them)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

from pydantic import BaseModel
from webshepherd.daemon.records.kind import Record, RecordKind, to_json
from webshepherd.protocol.common import CommitMode

if TYPE_CHECKING:
    from pydantic.main import IncEx

TABLES = """
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    body TEXT NOT NULL,             -- JSON, as a subscriber received it
    created_at REAL NOT NULL,
    PRIMARY KEY (session_id, seq)
);
"""

# Event bodies stored without these fields; the reader puts them back from their own table
# (an observation's AX tree is stored once, in ``observations``).
EVENT_REFERENCES = {"observed": ("axtree",)}
# and without these, not put back: an approval card's screenshot bytes (the observation's
# screenshot is stored once, in ``observations``; the history's card shows none)
EVENT_DROPPED: dict[str, dict[str, IncEx]] = {
    "approval.request": {"card": {"screenshot": {"data"}}}
}


@dataclass(frozen=True)
class EventRecord(Record):
    """A published event, for the session's event log."""

    op: ClassVar[str] = "event"
    session_id: str
    event: BaseModel


def _write(db: sqlite3.Connection, r: EventRecord) -> None:
    """Append one event to the session's ordered log, numbered after the last one there (read
    inside the recorder's transaction, so a rolled-back append leaves no gap)."""
    session_id, kind = r.session_id, str(getattr(r.event, "type", None))
    exclude = {f: True for f in EVENT_REFERENCES.get(kind, ())} | EVENT_DROPPED.get(kind, {})
    body = r.event.model_dump(mode="json", exclude=exclude)
    last = db.execute(
        "SELECT COALESCE(MAX(seq), -1) FROM events WHERE session_id = ?", (session_id,)
    ).fetchone()
    db.execute(
        "INSERT INTO events VALUES (?, ?, ?, ?, ?)",
        (session_id, int(last[0]) + 1, kind, to_json(body), time.time()),
    )


KIND = RecordKind(EventRecord, _write, TABLES)
KINDS = (KIND,)


def bodies_from(db: sqlite3.Connection, session_id: str, after: int) -> Iterator[str]:
    """The session's event bodies (JSON text) from number ``after`` on, in order."""
    for row in db.execute(
        "SELECT seq, body FROM events WHERE session_id = ? ORDER BY seq LIMIT -1 OFFSET ?",
        (session_id, after),
    ):
        yield row["body"]


def _bodies(db: sqlite3.Connection, session_id: str, kind: str) -> list[dict[str, Any]]:
    """The session's events of type ``kind``, in order, as dicts."""
    return [
        json.loads(e["body"])
        for e in db.execute(
            "SELECT body FROM events WHERE session_id = ? AND type = ? ORDER BY seq",
            (session_id, kind),
        )
    ]


def signals(db: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """The session's ``signal`` events in order."""
    return _bodies(db, session_id, "signal")


def approval_thresholds(db: sqlite3.Connection, session_id: str) -> dict[str, float | None]:
    """Each approval request's threshold, by request id (its ``approval.request`` event)."""
    out: dict[str, float | None] = {}
    for body in _bodies(db, session_id, "approval.request"):
        got = body.get("threshold")
        out[str(body.get("request_id"))] = float(got) if got is not None else None
    return out


def mode(
    db: sqlite3.Connection, session_id: str
) -> tuple[CommitMode | None, Literal["browser"] | None]:
    """The session's latest recorded mode (``mode.set``, else ``session.started``) and its
    start's ``holds`` (a value the wire does not know reads as none)."""
    got: CommitMode | None = None
    holds: Literal["browser"] | None = None
    for e in db.execute(
        "SELECT type, body FROM events WHERE session_id = ? "
        "AND type IN ('session.started', 'mode.set') ORDER BY seq",
        (session_id,),
    ):
        body = json.loads(e["body"])
        recorded = body.get("mode")
        if recorded in get_args(CommitMode):
            got = recorded
        if e["type"] == "session.started":
            holds = "browser" if body.get("holds") == "browser" else None
    return got, holds
