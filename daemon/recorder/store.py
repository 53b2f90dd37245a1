"""Writes to the recording, on one writer thread. Every write is committed before it returns
(:meth:`Recorder.commit` resolves only once its transaction is in the WAL file), so the
daemon replies only after the row is durable and the event loop never waits on SQLite."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from webshepherd.daemon.recorder.schema import DDL, SCHEMA_VERSION
from webshepherd.daemon.records import (
    ActionRecord,
    ApprovalDecidedRecord,
    ApprovalRequestedRecord,
    ChecklistRecord,
    EventRecord,
    LabelRecord,
    ObservationRecord,
    Record,
    ScoreDecisionRecord,
    ScoreRecord,
    ScorerRecord,
    SessionEndedRecord,
    SessionStartedRecord,
    TreeNodeRecord,
)
from webshepherd.protocol.errors import WebShepherdError

if TYPE_CHECKING:
    from pydantic.main import IncEx

log = logging.getLogger(__name__)
SIDE_FILES = ("-wal", "-shm", "-journal")
# Texts above this are written in pieces (:meth:`Recorder._write_text_in_pieces`).
BIG_TEXT_CHARS = 4 * 1024 * 1024
_PIECE_CHARS = 1024 * 1024


def make_private(db_path: Path) -> None:
    """The recording holds AX trees and screenshots: its folder 0700, its files 0600.

    The folder is created 0700; an existing one the daemon's user owns is narrowed to 0700
    unless it is a shared (sticky) folder such as /tmp. The database file is created 0600
    before SQLite opens it; SQLite gives its WAL and SHM files the database file's mode.
    """
    folder = db_path.parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = folder.stat()
    if st.st_mode & 0o077 and not st.st_mode & stat.S_ISVTX and st.st_uid == os.getuid():
        log.info("narrowing %s to 0700 (the recording is private)", folder)
        folder.chmod(0o700)
    os.close(os.open(db_path, os.O_RDWR | os.O_CREAT, 0o600))
    for path in [db_path, *(db_path.with_name(db_path.name + s) for s in SIDE_FILES)]:
        if path.exists() and path.stat().st_mode & 0o077:
            path.chmod(0o600)


def _json(v: object) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _models_json(models: Iterable[BaseModel]) -> str:
    """A column holding a list of wire models: checklist items, a result's item
    probabilities (the one serialisation of a step's result into the recording)."""
    return _json([m.model_dump() for m in models])


# Event bodies stored without these fields; the reader puts them back from their own table
# (an observation's AX tree is stored once, in ``observations``).
EVENT_REFERENCES = {"observed": ("axtree",)}
# and without these, not put back: an approval card's screenshot bytes (the observation's
# screenshot is stored once, in ``observations``; the history's card shows none)
EVENT_DROPPED: dict[str, dict[str, IncEx]] = {
    "approval.request": {"card": {"screenshot": {"data"}}}
}


def _utf8_pieces(text: str) -> list[bytes]:
    """A big text's UTF-8 in pieces of :data:`_PIECE_CHARS` characters. Binding it whole
    holds the GIL while SQLite copies it (25 ms for 31 MiB here, a stall of the event
    loop); an insert of a sized text then written piece by piece through SQLite's blob
    handle holds it for a piece at a time, at about 40% more time on this thread."""
    return [text[i : i + _PIECE_CHARS].encode() for i in range(0, len(text), _PIECE_CHARS)]


class Recorder:
    """The SQLite recording of every session (WAL; one write connection, used on one writer
    thread through :meth:`commit`; readers open their own connections)."""

    def __init__(self, path: Path):
        make_private(path)
        self.path = path
        self.db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(DDL)
        self.db.execute(
            "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
        )
        self._lock = threading.RLock()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="recorder")
        self._seq: dict[str, int] = {}

    def close(self) -> None:
        self._writer.shutdown(wait=True)
        self.db.close()

    def apply(self, record: Record) -> None:
        """Carry out one write of the session machine (on the calling thread)."""
        match record:
            case SessionStartedRecord():
                self.session_started(record)
            case ObservationRecord():
                self.observation(record)
            case ChecklistRecord():
                self.checklist(record)
            case ScoreRecord():
                self.score(record)
            case ScoreDecisionRecord():
                self.score_decision(record)
            case ApprovalRequestedRecord():
                self.approval_requested(record)
            case ApprovalDecidedRecord():
                self.approval_decided(record)
            case ActionRecord():
                self.action(record)
            case LabelRecord():
                self.label(record)
            case TreeNodeRecord():
                self.tree_node(record)
            case SessionEndedRecord():
                self.session_ended(record)
            case ScorerRecord():
                self.scorer(record)
            case EventRecord():
                self.append_event(record)
            case _:
                raise WebShepherdError(f"recorder: unknown record {type(record).__name__}")

    def apply_all(self, records: Sequence[Record]) -> None:
        """Several writes in one transaction: all are recorded, or none."""
        with self._transaction():
            for record in records:
                self.apply(record)

    async def commit(self, records: Sequence[Record]) -> None:
        """:meth:`apply_all` on the writer thread, in the order commits were asked for;
        returns once the transaction is committed (raises what it raised)."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._writer, self.apply_all, list(records))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """BEGIN … COMMIT (ROLLBACK on error); nested uses join the outer transaction."""
        with self._lock:
            if self.db.in_transaction:
                yield
                return
            self.db.execute("BEGIN")
            try:
                yield
            except BaseException:
                self.db.execute("ROLLBACK")
                self._seq.clear()  # event numbers are read again from the table
                raise
            self.db.execute("COMMIT")

    def _tx(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        with self._transaction():
            for sql, args in statements:
                self.db.execute(sql, args)

    # -- operations (one per record kind) ---------------------------------
    def session_started(self, r: SessionStartedRecord) -> None:
        e = r.event
        agent = e.agent.model_dump() if e.agent is not None else {}
        self._tx(
            [
                (
                    "INSERT INTO sessions (session_id, intent, start_url, agent, source, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (e.session_id, e.intent, e.start_url, _json(agent), e.source, r.created_at),
                )
            ]
        )

    def observation(self, r: ObservationRecord) -> None:
        e = r.event
        axtree = e.axtree or ""
        big = len(axtree) > BIG_TEXT_CHARS
        pieces = _utf8_pieces(axtree) if big else []
        with self._transaction():
            cur = self.db.execute(
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
                with self.db.blobopen("observations", "axtree", cur.lastrowid) as blob:
                    for piece in pieces:
                        blob.write(piece)
            if r.boxes:
                self.db.execute(
                    "INSERT INTO observation_boxes VALUES (?, ?)", (cur.lastrowid, _json(r.boxes))
                )
            self.db.execute(
                "UPDATE sessions SET steps = MAX(steps, ?) WHERE session_id = ?",
                (e.step + 1, e.session_id),
            )

    def checklist(self, r: ChecklistRecord) -> None:
        e = r.event
        self._tx(
            [
                (
                    "INSERT OR REPLACE INTO checklists VALUES (?, ?, ?, ?)",
                    (e.session_id, e.source, e.text, _models_json(e.items)),
                )
            ]
        )

    def score(self, r: ScoreRecord) -> None:
        with self._transaction():
            cur = self.db.execute(
                "INSERT INTO score_requests (session_id, request_id, step, samples, approval, "
                "best, queue_ms, model_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    r.session_id,
                    r.request_id,
                    r.step,
                    r.samples,
                    r.approval,
                    r.best,
                    r.timing.queue_ms,
                    r.timing.model_ms,
                    r.created_at,
                ),
            )
            score_id = cur.lastrowid
            for cand, res in zip(r.candidates, r.results, strict=True):
                self.db.execute(
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
                        _models_json(res.items),
                    ),
                )
                for k, s in enumerate(res.samples):
                    self.db.execute(
                        "INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?)",
                        (score_id, res.index, k, s.text, s.reward, _models_json(s.items)),
                    )
                unparsed = [s.unparsed for s in res.samples]
                if res.unparsed_samples or res.judge_inputs != "text" or any(unparsed):
                    self.db.execute(  # the rest of the result (its defaults take no row)
                        "INSERT INTO candidate_judging VALUES (?, ?, ?, ?, ?)",
                        (
                            score_id,
                            res.index,
                            res.unparsed_samples,
                            res.judge_inputs,
                            _json(unparsed),
                        ),
                    )
            self.db.execute(
                "UPDATE sessions SET latest_reward = ? WHERE session_id = ?",
                (r.latest_reward, r.session_id),
            )

    def score_decision(self, r: ScoreDecisionRecord) -> None:
        e = r.event
        self._tx(
            [
                (
                    "UPDATE score_requests SET decision = ? WHERE id = "
                    "(SELECT MAX(id) FROM score_requests WHERE session_id = ? AND request_id = ?)",
                    (_json(e.decision.model_dump()), e.session_id, r.request_id),
                )
            ]
        )

    def approval_requested(self, r: ApprovalRequestedRecord) -> None:
        e = r.event
        self._tx(
            [
                (
                    "INSERT INTO approvals (request_id, session_id, step, candidate_index, "
                    "reward, reason, feedback, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        e.request_id,
                        e.session_id,
                        e.step,
                        -1 if e.candidate_index is None else e.candidate_index,  # a paused request
                        e.reward,
                        e.reason,
                        e.feedback,
                        r.created_at,
                    ),
                ),
                *(
                    [
                        (
                            "INSERT INTO approval_guards VALUES (?, ?)",
                            (e.request_id, _models_json(e.guard)),
                        )
                    ]
                    if e.guard
                    else []
                ),
            ]
        )

    def approval_decided(self, r: ApprovalDecidedRecord) -> None:
        e = r.event
        self._tx(
            [
                (
                    "UPDATE approvals SET decision = ?, status = ?, action = ?, "
                    "decided_by = ?, note = ?, decided_at = ? WHERE request_id = ?",
                    (e.decision, r.status, e.action, e.by, e.note, r.decided_at, e.request_id),
                )
            ]
        )

    def action(self, r: ActionRecord) -> None:
        e = r.event
        self._tx(
            [
                (
                    "INSERT INTO actions (session_id, step, action, thought, source, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (e.session_id, e.step, e.action, e.thought, e.source, r.created_at),
                )
            ]
        )

    def label(self, r: LabelRecord) -> None:
        """Ground truth for a scored candidate (a later label of the same one wins on read)."""
        x = r.label
        self._tx(
            [
                (
                    "INSERT INTO labels (session_id, step, action, items, source, labelled_by, "
                    "note, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        x.session_id,
                        x.step,
                        x.action,
                        _json(x.items),
                        x.source,
                        r.by,
                        x.note,
                        r.created_at,
                    ),
                )
            ]
        )

    def tree_node(self, r: TreeNodeRecord) -> None:
        """One update of a search tree's node (appended: the latest per node wins on read)."""
        e = r.event
        self._tx(
            [
                (
                    "INSERT INTO tree_nodes (session_id, node, parent, depth, action, thought, "
                    "reward, count, status, executed, replays, step, expanded_at, url, error, "
                    "event, trying, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        e.session_id,
                        e.node,
                        e.parent,
                        e.depth,
                        e.action,
                        e.thought,
                        e.reward,
                        e.count,
                        e.status,
                        int(e.executed),
                        e.replays,
                        e.step,
                        e.expanded_at,
                        e.url,
                        e.error,
                        e.event,
                        e.trying,
                        r.created_at,
                    ),
                )
            ]
        )

    def session_ended(self, r: SessionEndedRecord) -> None:
        e = r.event
        self._tx(
            [
                (
                    "UPDATE sessions SET outcome = ?, answer = ?, ended_at = ? "
                    "WHERE session_id = ?",
                    (e.outcome, e.answer, r.ended_at, e.session_id),
                )
            ]
        )

    def scorer(self, r: ScorerRecord) -> None:
        """The model and backend that score the session, and their judging settings (kept
        for reports)."""
        self._tx(
            [
                (
                    "INSERT OR REPLACE INTO session_scorers VALUES (?, ?, ?)",
                    (r.session_id, r.model, r.backend),
                ),
                (
                    "INSERT OR REPLACE INTO session_scorer_settings VALUES (?, ?)",
                    (r.session_id, json.dumps(r.settings or {}, sort_keys=True)),
                ),
            ]
        )

    def append_event(self, r: EventRecord) -> None:
        """Append one event to the session's ordered log, as subscribers get it (big fields
        by reference)."""
        session_id, kind = r.session_id, str(getattr(r.event, "type", None))
        exclude = {f: True for f in EVENT_REFERENCES.get(kind, ())} | EVENT_DROPPED.get(kind, {})
        body = r.event.model_dump(mode="json", exclude=exclude)
        with self._transaction():
            seq = self._seq.get(session_id)
            if seq is None:
                row = self.db.execute(
                    "SELECT COALESCE(MAX(seq), -1) FROM events WHERE session_id = ?", (session_id,)
                ).fetchone()
                seq = int(row[0])
            self.db.execute(
                "INSERT INTO events VALUES (?, ?, ?, ?, ?)",
                (session_id, seq + 1, kind, _json(body), time.time()),
            )
            self._seq[session_id] = seq + 1
