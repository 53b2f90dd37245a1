"""A scored step reads back with its decision (kept on the latest request of its id), and as
the machine resumes it: each candidate's action, reward and checklist levels. (Every field of
a candidate's result: tests/daemon/recorder/test_store.py.)"""

from __future__ import annotations

from webshepherd.daemon.records.scores import (
    ScoreDecisionRecord,
    ScoreRecord,
    read,
    scored_steps,
    stored,
)
from webshepherd.daemon.records.stored import StoredScore
from webshepherd.protocol.common import Candidate, CandidateResult, DecisionInfo, Timing
from webshepherd.protocol.replies import Scored

YES = {"index": 1, "yes": 0.9, "in_progress": 0.1, "no": 0.0}
NO = {"index": 2, "yes": 0.0, "in_progress": 0.2, "no": 0.8}


def _score(step: int, request_id: str, reward: float | None, at: float) -> ScoreRecord:
    items = [YES, NO] if reward is not None else []
    results = [
        CandidateResult(
            index=0, reward=reward, items=items, feedback="f", samples=[], parsed_samples=1
        )
    ]
    return ScoreRecord(
        "s1", request_id, step, 1, "never", [Candidate(action=f"click('{step}')")], results,
        0, Timing(queue_ms=1.0, model_ms=2.0), at, reward,
    )  # fmt: skip


def _decided(request_id: str, step: int, status: str) -> ScoreDecisionRecord:
    event = Scored(
        session_id="s1", step=step, results=[], best=0,
        decision=DecisionInfo(status=status, index=0),  # type: ignore[arg-type]
    )  # fmt: skip
    return ScoreDecisionRecord(request_id, event)


def test_scorings_read_back_with_their_decisions_and_levels(rec) -> None:
    rec.apply_all([_score(0, "q1", 0.55, 2.0), _score(0, "q1", None, 3.0)])  # q1 scored twice
    rec.apply_all([_score(1, "q2", 0.7, 4.0), _decided("q1", 0, "approved")])
    got = read(rec.db, "s1")
    assert [(n, s.request_id, s.created_at) for n, s in got] == [
        (0, "q1", 2.0),
        (0, "q1", 3.0),
        (1, "q2", 4.0),
    ]
    approved = DecisionInfo(status="approved", index=0).model_dump()
    assert [s.decision for _, s in got] == [None, approved, None]  # the latest q1
    assert got[0][1].candidates[0].result.reward == 0.55 and got[0][1].queue_ms == 1.0
    assert stored(rec.db, "s1") == (
        StoredScore(0, (("click('0')", 0.55, {1: 2, 2: 0}),)),
        StoredScore(0, (("click('0')", None, None),)),  # no checklist items: no levels
        StoredScore(1, (("click('1')", 0.7, {1: 2, 2: 0}),)),
    )
    assert scored_steps(rec.db, "s1") == 2
    assert rec.db.execute("SELECT latest_reward FROM sessions").fetchone()[0] == 0.7
