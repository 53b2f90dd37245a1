"""Held steps: the ``approvals`` row (requested, then decided) and the guards that held it."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import ClassVar

from webshepherd.daemon.records.kind import Record, RecordKind, insert, models_json, table_rows
from webshepherd.protocol.agreement import by_person
from webshepherd.protocol.common import GuardHit
from webshepherd.protocol.replies import ApprovalRequest, ApprovalResolved

TABLES = """
CREATE TABLE IF NOT EXISTS approvals (
    request_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(session_id),
    step INTEGER NOT NULL,
    candidate_index INTEGER NOT NULL,
    reward REAL,
    reason TEXT NOT NULL,
    feedback TEXT NOT NULL,
    created_at REAL NOT NULL,
    decision TEXT,                  -- approve / reject / edit / timeout
    status TEXT,
    action TEXT,
    decided_by TEXT,
    note TEXT,
    decided_at REAL
);
CREATE TABLE IF NOT EXISTS approval_guards (
    request_id TEXT PRIMARY KEY REFERENCES approvals(request_id),
    hits TEXT NOT NULL              -- JSON list of GuardHit: the guard rules that held the step
);
"""


@dataclass(frozen=True)
class ApprovalRequestedRecord(Record):
    op: ClassVar[str] = "approval_requested"
    event: ApprovalRequest
    created_at: float


@dataclass(frozen=True)
class ApprovalDecidedRecord(Record):
    op: ClassVar[str] = "approval_decided"
    event: ApprovalResolved
    status: str
    decided_at: float


def _requested(db: sqlite3.Connection, r: ApprovalRequestedRecord) -> None:
    e = r.event
    row: dict[str, object] = {
        "request_id": e.request_id,
        "session_id": e.session_id,
        "step": e.step,
    }
    index = -1 if e.candidate_index is None else e.candidate_index  # -1: a paused request
    row |= {"candidate_index": index, "reward": e.reward, "reason": e.reason}
    insert(db, "approvals", row | {"feedback": e.feedback, "created_at": r.created_at})
    if e.guard:
        db.execute(
            "INSERT INTO approval_guards VALUES (?, ?)", (e.request_id, models_json(e.guard))
        )


def _decided(db: sqlite3.Connection, r: ApprovalDecidedRecord) -> None:
    e = r.event
    db.execute(
        "UPDATE approvals SET decision = ?, status = ?, action = ?, "
        "decided_by = ?, note = ?, decided_at = ? WHERE request_id = ?",
        (e.decision, r.status, e.action, e.by, e.note, r.decided_at, e.request_id),
    )


REQUESTED = RecordKind(ApprovalRequestedRecord, _requested, TABLES)
DECIDED = RecordKind(ApprovalDecidedRecord, _decided)
KINDS = (REQUESTED, DECIDED)


@dataclass
class Approval:
    """A held step's approval request and how it ended (``decision`` None while open)."""

    request_id: str
    candidate_index: int
    reward: float | None
    reason: str
    feedback: str
    decision: str | None
    status: str | None
    action: str | None
    decided_by: str | None
    note: str | None
    created_at: float
    decided_at: float | None
    threshold: float | None = None  # the approval threshold in force when it was held

    @property
    def by_person(self) -> bool:
        """A person's approve, reject or edit: ground truth (docs/training.md); a timeout or
        anything the daemon decided is not."""
        return by_person(self.decision, self.decided_by)

    # the guard rules that held it (sessions/guards.py; none in a recording made before guards)
    guard: list[GuardHit] = field(default_factory=list)


def read(db: sqlite3.Connection, session_id: str) -> list[tuple[int, Approval]]:
    """The session's approvals as ``(step, approval)`` in the order they were requested,
    each with the guards' hits that held it (no threshold: the events log has it)."""
    out = [
        (
            a["step"],
            Approval(
                a["request_id"],
                a["candidate_index"],
                a["reward"],
                a["reason"],
                a["feedback"],
                a["decision"],
                a["status"],
                a["action"],
                a["decided_by"],
                a["note"],
                a["created_at"],
                a["decided_at"],
            ),
        )
        for a in db.execute(
            "SELECT * FROM approvals WHERE session_id = ? ORDER BY created_at", (session_id,)
        )
    ]
    hits = {
        r["request_id"]: [GuardHit.model_validate(h) for h in json.loads(r["hits"])]
        for r in table_rows(  # none in a recording made before guards
            db,
            "SELECT g.request_id, g.hits, a.step FROM approval_guards g "
            "JOIN approvals a ON a.request_id = g.request_id WHERE a.session_id = ?",
            (session_id,),
        )
    }
    for _, approval in out:
        approval.guard = hits.get(approval.request_id, approval.guard)
    return out


def open_requests(db: sqlite3.Connection) -> list[tuple[str, str]]:
    """``(request_id, session_id)`` of the approval requests nobody decided."""
    rows = db.execute(
        "SELECT request_id, session_id FROM approvals WHERE decision IS NULL ORDER BY rowid"
    )
    return [(r["request_id"], r["session_id"]) for r in rows]


def request_ids(db: sqlite3.Connection) -> list[str]:
    """Every recorded approval request id (a restart numbers new ones after them)."""
    return [r[0] for r in db.execute("SELECT request_id FROM approvals")]
