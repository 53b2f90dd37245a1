"""A held step's approval reads back with the guards' hits that held it and how it ended; an
undecided one is open; a paused request (no candidate) keeps its row; a recording made before
guards reads no hits."""

from __future__ import annotations

from webshepherd.daemon.records.approvals import (
    ApprovalDecidedRecord,
    open_requests,
    read,
    request_ids,
)
from webshepherd.daemon.records.approvals import ApprovalRequestedRecord as Requested
from webshepherd.protocol.common import Candidate, GuardHit
from webshepherd.protocol.replies import ApprovalRequest, ApprovalResolved

HIT = GuardHit(rule="form_submit", detail="submits the order form")


def _held(request_id: str, step: int, index: int | None, at: float, **kw) -> Requested:
    event = ApprovalRequest(
        request_id=request_id, session_id="s1", step=step, candidate=Candidate(action="click('9')"),
        candidate_index=index, reward=0.3, reason="guarded" if kw else "commit",
        expires_in_s=60.0, **kw,
    )  # fmt: skip
    return Requested(event, at)


def test_approvals_read_back_with_their_guards_and_decisions(rec) -> None:
    rec.apply_all([_held("r1", 2, 0, 5.0, guard=[HIT]), _held("r2", 3, None, 6.0)])
    assert open_requests(rec.db) == [("r1", "s1"), ("r2", "s1")]
    assert sorted(request_ids(rec.db)) == ["r1", "r2"]  # decided or not: a restart skips them
    resolved = ApprovalResolved(
        request_id="r1", session_id="s1", decision="reject", by="monitor:ann", note="not yet"
    )
    rec.apply(ApprovalDecidedRecord(resolved, "rejected", 7.0))
    assert open_requests(rec.db) == [("r2", "s1")]
    (s1, first), (s2, paused) = read(rec.db, "s1")
    assert (s1, first.request_id, first.candidate_index, first.reason) == (2, "r1", 0, "guarded")
    assert (first.decision, first.status, first.decided_by, first.note, first.decided_at) == (
        "reject",
        "rejected",
        "monitor:ann",
        "not yet",
        7.0,
    )
    assert first.guard == [HIT] and first.by_person and first.threshold is None
    assert (s2, paused.candidate_index, paused.decision, paused.guard) == (3, -1, None, [])
    rec.db.execute("DROP TABLE approval_guards")  # as a recording made before guards
    assert [a.guard for _, a in read(rec.db, "s1")] == [[], []]
