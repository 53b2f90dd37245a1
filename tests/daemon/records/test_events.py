"""The event log: each session's events numbered from 0 in publish order (a rolled-back
append leaves no gap), big fields stored by reference, and what the readers take from it
(signals, approval thresholds, the latest mode and the start's ``holds``)."""

from __future__ import annotations

import json
import sqlite3

import pytest
from webshepherd.daemon.records.events import (
    EventRecord,
    approval_thresholds,
    bodies_from,
    mode,
    signals,
)
from webshepherd.daemon.records.sessions import SessionStartedRecord
from webshepherd.protocol.common import ApprovalCard, Candidate, Screenshot
from webshepherd.protocol.replies import ApprovalRequest, ModeSet, Observed, SessionStarted, Signal


def _log(rec, session_id: str) -> list[tuple[int, str]]:
    return [
        (r["seq"], r["type"])
        for r in rec.db.execute(
            "SELECT seq, type FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
        )
    ]


def test_events_are_numbered_per_session_without_gaps(rec) -> None:
    started = SessionStarted(session_id="s1", intent="buy a mug", source="agent", mode="ask")
    rec.apply_all([EventRecord("s1", started), EventRecord("s2", started)])
    again = SessionStartedRecord(started, 2.0)  # s1 is started already: its insert fails
    with pytest.raises(sqlite3.IntegrityError):  # and the event before it is rolled back
        rec.apply_all([EventRecord("s1", ModeSet(session_id="s1", mode="watch")), again])
    rec.apply(EventRecord("s1", ModeSet(session_id="s1", mode="stop")))
    assert _log(rec, "s1") == [(0, "session.started"), (1, "mode.set")]
    assert _log(rec, "s2") == [(0, "session.started")]
    assert mode(rec.db, "s1") == ("stop", None)


def test_big_fields_are_stored_by_reference_and_read_back(rec) -> None:
    observed = Observed(session_id="s1", step=0, url="http://shop.local/", axtree="[1] link")
    card = ApprovalCard(screenshot=Screenshot(mime="image/png", data="iVBORw0K"))
    held = ApprovalRequest(
        request_id="r1", session_id="s1", step=0, candidate=Candidate(action="click('1')"),
        reward=0.2, reason="below_threshold", expires_in_s=30.0, card=card, threshold=0.5,
    )  # fmt: skip
    signal = Signal(session_id="s1", step=2, kind="stalled", action="noop()", ok=False)
    started = SessionStarted(session_id="s1", holds="browser", mode="watch")
    rec.apply_all([EventRecord("s1", e) for e in (started, observed, held, signal)])
    bodies = [json.loads(b) for b in bodies_from(rec.db, "s1", 1)]
    assert [b["type"] for b in bodies] == ["observed", "approval.request", "signal"]
    assert "axtree" not in bodies[0]  # stored once, in observations
    assert bodies[1]["card"]["screenshot"] == {"mime": "image/png"}  # the bytes are not kept
    assert signals(rec.db, "s1") == [signal.model_dump(mode="json")]
    assert approval_thresholds(rec.db, "s1") == {"r1": 0.5}
    assert mode(rec.db, "s1") == ("watch", "browser")
    assert mode(rec.db, "s2") == (None, None)


def test_a_mode_or_holds_the_wire_does_not_know_reads_as_none(rec) -> None:
    """A recording edited by hand (or by a later version) cannot restore an unknown mode."""
    rec.apply(EventRecord("s1", SessionStarted(session_id="s1", mode="ask")))
    rec.apply(EventRecord("s1", ModeSet(session_id="s1", mode="watch")))
    with rec.db:
        rec.db.execute(
            "UPDATE events SET body = ? WHERE session_id = 's1' AND type = 'mode.set'",
            (json.dumps({"type": "mode.set", "session_id": "s1", "mode": "yolo"}),),
        )
        rec.db.execute(
            "UPDATE events SET body = ? WHERE session_id = 's1' AND type = 'session.started'",
            (json.dumps({"type": "session.started", "mode": "ask", "holds": "everything"}),),
        )
    assert mode(rec.db, "s1") == ("ask", None)
