"""What an agent saw at a step: the ``observations`` rows and their boxes."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import ClassVar

from webshepherd.daemon.records.kind import Record, RecordKind, table_rows, to_json
from webshepherd.protocol.replies import Observed

TABLES = """
CREATE TABLE IF NOT EXISTS observations (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(session_id),
    step INTEGER NOT NULL,
    url TEXT NOT NULL,
    axtree TEXT NOT NULL,
    screenshot_mime TEXT,
    screenshot BLOB,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS observation_boxes (
    observation_id INTEGER PRIMARY KEY REFERENCES observations(id),
    boxes TEXT NOT NULL             -- JSON {bid: [left, top, width, height]} in screenshot pixels
);
CREATE INDEX IF NOT EXISTS observations_by_session ON observations(session_id, step);
"""

# Texts above this are written in pieces (:func:`utf8_pieces`).
BIG_TEXT_CHARS = 4 * 1024 * 1024
_PIECE_CHARS = 1024 * 1024


@dataclass(frozen=True)
class ObservationRecord(Record):
    """The ``observed`` event (screenshot mime only) and what it does not carry."""

    op: ClassVar[str] = "observation"
    event: Observed
    screenshot: bytes | None
    created_at: float
    boxes: dict[str, list[float]] | None = None


def utf8_pieces(text: str) -> list[bytes]:
    """A big text's UTF-8 in pieces of :data:`_PIECE_CHARS` characters. Binding it whole
    holds the GIL while SQLite copies it (25 ms for 31 MiB here, a stall of the event
    loop); an insert of a sized text then written piece by piece through SQLite's blob
    handle holds it for a piece at a time, at about 40% more time on this thread."""
    return [text[i : i + _PIECE_CHARS].encode() for i in range(0, len(text), _PIECE_CHARS)]


def _write(db: sqlite3.Connection, r: ObservationRecord) -> None:
    e = r.event
    axtree = e.axtree or ""
    big = len(axtree) > BIG_TEXT_CHARS
    pieces = utf8_pieces(axtree) if big else []
    cur = db.execute(
        "INSERT INTO observations (session_id, step, url, axtree, screenshot_mime, "
        "screenshot, created_at) VALUES (?, ?, ?, "
        + ("CAST(zeroblob(?) AS TEXT)" if big else "?")
        + ", ?, ?, ?)",
        (
            e.session_id,
            e.step,
            e.url,
            sum(map(len, pieces)) if big else axtree,
            e.screenshot.mime if e.screenshot is not None else None,
            r.screenshot,
            r.created_at,
        ),
    )
    if big:
        assert cur.lastrowid is not None
        with db.blobopen("observations", "axtree", cur.lastrowid) as blob:
            for piece in pieces:
                blob.write(piece)
    if r.boxes:
        db.execute("INSERT INTO observation_boxes VALUES (?, ?)", (cur.lastrowid, to_json(r.boxes)))
    db.execute(
        "UPDATE sessions SET steps = MAX(steps, ?) WHERE session_id = ?",
        (e.step + 1, e.session_id),
    )


KIND = RecordKind(ObservationRecord, _write, TABLES)
KINDS = (KIND,)


Seen = tuple[int, str, str, bytes | None, str | None, float, dict[str, list[float]] | None]
"""One recorded observation as reports read it: ``(step, url, axtree, screenshot,
screenshot_mime, created_at, boxes)``, boxes as bid -> [left, top, width, height] in image px
(a tuple: the timeline's ``Step`` declares these fields)."""


def read(db: sqlite3.Connection, session_id: str) -> list[Seen]:
    """The session's observations in recording order, each with its boxes (none in a
    recording made before boxes were kept)."""
    boxes = {
        r["observation_id"]: json.loads(r["boxes"])
        for r in table_rows(
            db,
            "SELECT b.observation_id, b.boxes FROM observation_boxes b JOIN observations o "
            "ON o.id = b.observation_id WHERE o.session_id = ?",
            (session_id,),
        )
    }
    return [
        (
            o["step"],
            o["url"],
            o["axtree"],
            o["screenshot"],
            o["screenshot_mime"],
            o["created_at"],
            boxes.get(o["id"]),
        )
        for o in db.execute(
            "SELECT id, step, url, axtree, screenshot_mime, screenshot, created_at "
            "FROM observations WHERE session_id = ? ORDER BY id",
            (session_id,),
        )
    ]


def latest(db: sqlite3.Connection, session_id: str) -> tuple[int, str, str] | None:
    """The session's latest observation as ``(step, url, axtree)``."""
    obs = db.execute(
        "SELECT step, url, axtree FROM observations WHERE session_id = ? ORDER BY id DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    return (obs["step"], obs["url"], obs["axtree"]) if obs is not None else None


def axtree_at(db: sqlite3.Connection, session_id: str, step: int) -> str:
    """The AX tree seen last at ``step`` ("" when none was)."""
    got = db.execute(
        "SELECT axtree FROM observations WHERE session_id = ? AND step = ? "
        "ORDER BY id DESC LIMIT 1",
        (session_id, step),
    ).fetchone()
    return got["axtree"] if got else ""
