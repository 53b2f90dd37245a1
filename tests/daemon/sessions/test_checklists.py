"""The checklist has one owner, the session: asked once at a time, scores wait for it, its
result or its failure releases them (sans-I/O, no engine)."""

from __future__ import annotations

from webshepherd.daemon.engine.types import ChecklistItem, ParsedChecklist
from webshepherd.daemon.records.checklists import ChecklistRecord
from webshepherd.daemon.sessions import Publish, Reply, RunChecklist, RunScore
from webshepherd.daemon.sessions.checklists import NO_CHECKLIST
from webshepherd.protocol import requests as rq

from tests.daemon.sessions.test_machine import OBS, OWNER, make_core

CHECKLIST = ParsedChecklist((ChecklistItem(1, "Search"),), "Checklist 1: Search")


def start(core, parsed: ParsedChecklist | None = None) -> tuple[str, list]:
    msg = rq.SessionStart(id="s1", intent="buy", observation=OBS)
    effects = core.start(OWNER, msg, parsed)
    sid = next(e.message.session_id for e in effects if isinstance(e, Reply))
    return sid, effects


def score(core, sid: str, rid: str) -> list:
    cands = [{"action": "a"}, {"action": "b"}]
    msg = rq.Score(id=rid, session_id=sid, candidates=cands, approval="never")
    return core.score(OWNER, msg)


def test_one_generation_at_a_time_and_scores_wait_for_it():
    core = make_core()
    sid, effects = start(core)
    assert [type(e) for e in effects].count(RunChecklist) == 1
    for rid in ("c1", "c2"):  # no second generation while the first is under way
        assert not [e for e in score(core, sid, rid) if isinstance(e, (RunChecklist, RunScore))]
    assert [j.request_id for j in core.get(sid).awaiting_checklist] == ["c1", "c2"]

    out = core.checklist_ready(sid, CHECKLIST)
    assert isinstance(out[0], ChecklistRecord) and isinstance(out[1], Publish)
    jobs = [e for e in out if isinstance(e, RunScore)]
    assert [j.request_id for j in jobs] == ["c1", "c2"]
    assert all(j.input.checklist == CHECKLIST for j in jobs)
    assert core.get(sid).awaiting_checklist == []
    # once known, a score goes straight to the engine with it
    (job,) = [e for e in score(core, sid, "c3") if isinstance(e, RunScore)]
    assert job.input.checklist == CHECKLIST


def test_a_failed_generation_answers_the_waiting_scores_and_the_next_asks_again():
    core = make_core()
    sid, _ = start(core)
    score(core, sid, "c1")
    out = core.checklist_failed(sid, "the model's checklist could not be parsed")
    (reply,) = [e for e in out if isinstance(e, Reply)]
    assert reply.conn == OWNER and reply.message.id == "c1"
    assert [r.reward for r in reply.message.results] == [None, None]
    assert all(
        r.feedback == f"{NO_CHECKLIST}: the model's checklist could not be parsed"
        for r in reply.message.results
    )
    assert core.get(sid).awaiting_checklist == []
    again = score(core, sid, "c2")
    assert [type(e) for e in again if isinstance(e, (RunChecklist, RunScore))] == [RunChecklist]


def test_a_client_checklist_is_known_at_once():
    core = make_core()
    sid, effects = start(core, CHECKLIST)
    assert not [e for e in effects if isinstance(e, RunChecklist)]
    (job,) = [e for e in score(core, sid, "c1") if isinstance(e, RunScore)]
    assert job.input.checklist == CHECKLIST


def test_a_write_that_fails_rolls_the_waiting_back():
    core = make_core()
    sid, _ = start(core)
    undo = core.checkpoint(sid)
    score(core, sid, "c1")
    undo()
    st = core.get(sid)
    assert st.awaiting_checklist == [] and st.checklist_asked
    undo = core.checkpoint(sid)
    core.checklist_failed(sid, "")
    undo()  # the failure's reply was not recorded: the generation still counts as asked
    assert core.get(sid).checklist_asked
