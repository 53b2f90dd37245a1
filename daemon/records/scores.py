"""Scored steps: the ``score_requests`` row with its candidates' results, samples and
judging, and the decision the ``scored`` event carried."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, ClassVar, TypedDict

from webshepherd.daemon.records.kind import (
    Record,
    RecordKind,
    insert,
    models_json,
    table_rows,
    to_json,
)
from webshepherd.daemon.records.stored import StoredScore
from webshepherd.protocol.common import (
    Candidate,
    CandidateResult,
    ItemProbs,
    SampleResult,
    ScoredCandidate,
    Timing,
    UnparsedReason,
)
from webshepherd.protocol.progress import item_levels
from webshepherd.protocol.replies import Scored

TABLES = """
CREATE TABLE IF NOT EXISTS score_requests (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(session_id),
    request_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    samples INTEGER NOT NULL,
    approval TEXT NOT NULL,
    best INTEGER,
    decision TEXT,                  -- JSON DecisionInfo, once known
    queue_ms REAL,
    model_ms REAL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS candidate_results (
    score_id INTEGER NOT NULL REFERENCES score_requests(id),
    idx INTEGER NOT NULL,
    thought TEXT NOT NULL,
    action TEXT NOT NULL,
    reward REAL,
    feedback TEXT NOT NULL,
    parsed_samples INTEGER NOT NULL,
    probabilities TEXT NOT NULL,
    items TEXT NOT NULL,            -- JSON per-item label probabilities (mean over samples)
    PRIMARY KEY (score_id, idx)
);
CREATE TABLE IF NOT EXISTS samples (
    score_id INTEGER NOT NULL REFERENCES score_requests(id),
    candidate INTEGER NOT NULL,
    sample INTEGER NOT NULL,
    text TEXT NOT NULL,
    reward REAL,
    items TEXT NOT NULL,            -- JSON per-item label probabilities of this sample
    PRIMARY KEY (score_id, candidate, sample)
);
CREATE TABLE IF NOT EXISTS candidate_judging (
    score_id INTEGER NOT NULL REFERENCES score_requests(id),
    idx INTEGER NOT NULL,           -- a candidate_results row whose judgement left samples
    unparsed_samples INTEGER NOT NULL,  -- unparsed, or that saw a screenshot (else no row)
    judge_inputs TEXT NOT NULL,     -- text / text+image
    unparsed TEXT NOT NULL,         -- JSON list: each sample's unparsed reason, or null
    PRIMARY KEY (score_id, idx)
);
CREATE INDEX IF NOT EXISTS scores_by_session ON score_requests(session_id, step);
"""


@dataclass(frozen=True)
class ScoreRecord(Record):
    """A scored step, written before its decision is known (the ``scored`` event, built from
    the same candidates and results, comes with :class:`ScoreDecisionRecord`)."""

    op: ClassVar[str] = "score"
    session_id: str
    request_id: str
    step: int
    samples: int
    approval: str
    candidates: list[Candidate]
    results: list[CandidateResult]
    best: int | None
    timing: Timing
    created_at: float
    latest_reward: float | None


@dataclass(frozen=True)
class ScoreDecisionRecord(Record):
    """The ``scored`` event: its decision, kept with the score request it answers."""

    op: ClassVar[str] = "score_decision"
    request_id: str
    event: Scored


def _score(db: sqlite3.Connection, r: ScoreRecord) -> None:
    row: dict[str, object] = {
        "session_id": r.session_id,
        "request_id": r.request_id,
        "step": r.step,
    }
    row |= {"samples": r.samples, "approval": r.approval, "best": r.best}
    row |= {"queue_ms": r.timing.queue_ms, "model_ms": r.timing.model_ms}
    cur = insert(db, "score_requests", row | {"created_at": r.created_at})
    score_id = cur.lastrowid
    for cand, res in zip(r.candidates, r.results, strict=True):
        db.execute(
            "INSERT INTO candidate_results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                score_id,
                res.index,
                cand.thought,
                cand.action,
                res.reward,
                res.feedback,
                res.parsed_samples,
                res.probabilities,
                models_json(res.items),
            ),
        )
        for k, s in enumerate(res.samples):
            db.execute(
                "INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?)",
                (score_id, res.index, k, s.text, s.reward, models_json(s.items)),
            )
        unparsed = [s.unparsed for s in res.samples]
        if res.unparsed_samples or res.judge_inputs != "text" or any(unparsed):
            db.execute(  # the rest of the result (its defaults take no row)
                "INSERT INTO candidate_judging VALUES (?, ?, ?, ?, ?)",
                (score_id, res.index, res.unparsed_samples, res.judge_inputs, to_json(unparsed)),
            )
    db.execute(
        "UPDATE sessions SET latest_reward = ? WHERE session_id = ?",
        (r.latest_reward, r.session_id),
    )


def _decision(db: sqlite3.Connection, r: ScoreDecisionRecord) -> None:
    e = r.event
    db.execute(
        "UPDATE score_requests SET decision = ? WHERE id = "
        "(SELECT MAX(id) FROM score_requests WHERE session_id = ? AND request_id = ?)",
        (to_json(e.decision.model_dump()), e.session_id, r.request_id),
    )


SCORE = RecordKind(ScoreRecord, _score, TABLES)
DECISION = RecordKind(ScoreDecisionRecord, _decision)
KINDS = (SCORE, DECISION)


@dataclass
class Scoring:
    """One ``score`` request of a step and what came of it: each candidate as the wire types
    hold it (:class:`ScoredCandidate`), every field of its result as the ``scored`` reply
    carried it (a recording made before ``candidate_judging`` reads ``unparsed_samples``,
    ``judge_inputs`` and a sample's ``unparsed`` reason as the wire model's defaults)."""

    request_id: str
    best: int | None
    decision: dict[str, Any] | None  # the scored reply's DecisionInfo, once known
    candidates: list[ScoredCandidate]
    queue_ms: float | None
    model_ms: float | None
    created_at: float


def read(db: sqlite3.Connection, session_id: str) -> list[tuple[int, Scoring]]:
    """Each score request as ``(step, scoring)`` in recording order, with its candidates and
    their samples. Built with ``model_construct``: what was recorded was validated on the way
    in, and reading it back checks nothing again (an old recording reads as it was
    written)."""
    judging = _read_judging(db, session_id)
    samples: dict[tuple[int, int], list[SampleResult]] = defaultdict(list)
    for t in db.execute(
        "SELECT t.score_id, t.candidate, t.sample, t.text, t.reward, t.items FROM samples t "
        "JOIN score_requests r ON t.score_id = r.id WHERE r.session_id = ? "
        "ORDER BY t.score_id, t.candidate, t.sample",
        (session_id,),
    ):
        key = (t["score_id"], t["candidate"])
        reasons = judging[key][2] if key in judging else []
        reason = reasons[t["sample"]] if t["sample"] < len(reasons) else None
        samples[key].append(
            SampleResult.model_construct(
                reward=t["reward"],
                text=t["text"],
                items=read_items(t["items"]),
                **({"unparsed": reason} if reason is not None else {}),
            )
        )
    cands: dict[int, list[ScoredCandidate]] = defaultdict(list)
    for c in db.execute(
        "SELECT c.* FROM candidate_results c JOIN score_requests r ON c.score_id = r.id "
        "WHERE r.session_id = ? ORDER BY c.score_id, c.idx",
        (session_id,),
    ):
        cands[c["score_id"]].append(
            ScoredCandidate(
                Candidate.model_construct(thought=c["thought"], action=c["action"]),
                CandidateResult.model_construct(
                    index=c["idx"],
                    reward=c["reward"],
                    items=read_items(c["items"]),
                    feedback=c["feedback"],
                    samples=samples.get((c["score_id"], c["idx"]), []),
                    parsed_samples=c["parsed_samples"],
                    probabilities=c["probabilities"],
                    **_judged(judging.get((c["score_id"], c["idx"]))),
                ),
            )
        )
    return [
        (
            r["step"],
            Scoring(
                r["request_id"],
                r["best"],
                json.loads(r["decision"]) if r["decision"] else None,
                cands.get(r["id"], []),
                r["queue_ms"],
                r["model_ms"],
                r["created_at"],
            ),
        )
        for r in db.execute(
            "SELECT * FROM score_requests WHERE session_id = ? ORDER BY id", (session_id,)
        )
    ]


Judging = tuple[int, str, list[UnparsedReason | None]]
"""A ``candidate_judging`` row: unparsed samples, judge inputs, each sample's unparsed reason."""


def _read_judging(db: sqlite3.Connection, session_id: str) -> dict[tuple[int, int], Judging]:
    """The ``candidate_judging`` rows of a session by (score id, candidate index)."""
    rows = table_rows(
        db,
        "SELECT j.* FROM candidate_judging j JOIN score_requests r ON j.score_id = r.id "
        "WHERE r.session_id = ?",
        (session_id,),
    )
    return {
        (j["score_id"], j["idx"]): (
            j["unparsed_samples"],
            j["judge_inputs"],
            json.loads(j["unparsed"]),
        )
        for j in rows
    }


class _Judged(TypedDict, total=False):
    """The fields of a candidate result its ``candidate_judging`` row gives."""

    unparsed_samples: int
    judge_inputs: str


def _judged(row: Judging | None) -> _Judged:
    """A candidate result's fields from its ``candidate_judging`` row (none: the defaults)."""
    return {} if row is None else {"unparsed_samples": row[0], "judge_inputs": row[1]}


def read_items(text: str) -> list[ItemProbs]:
    """An ``items`` column of ``candidate_results`` or ``samples``."""
    return [ItemProbs.model_validate(i) for i in json.loads(text)]


def stored(db: sqlite3.Connection, session_id: str) -> tuple[StoredScore, ...]:
    """The session's score requests as the machine resumes them, in recording order."""
    scores = []
    for s in db.execute(
        "SELECT id, step FROM score_requests WHERE session_id = ? ORDER BY id", (session_id,)
    ).fetchall():
        cands = db.execute(
            "SELECT action, reward, items FROM candidate_results WHERE score_id = ? ORDER BY idx",
            (s["id"],),
        ).fetchall()
        scores.append(
            StoredScore(
                s["step"],
                tuple(
                    (
                        c["action"],
                        c["reward"],
                        item_levels(read_items(c["items"])) if c["items"] != "[]" else None,
                    )
                    for c in cands
                ),
            )
        )
    return tuple(scores)


def scored_steps(db: sqlite3.Connection, session_id: str) -> int:
    """How many of the session's steps were scored at least once."""
    row = db.execute(
        "SELECT COUNT(DISTINCT step) FROM score_requests WHERE session_id = ?", (session_id,)
    ).fetchone()
    return int(row[0])
