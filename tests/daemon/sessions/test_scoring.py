"""Scored steps (sessions/scoring.py): a job's result scored, refused or held for a person,
and the rules' predictions."""

from __future__ import annotations

import pytest
from webshepherd.daemon.engine.types import (
    ChecklistItem,
    ParsedChecklist,
)
from webshepherd.daemon.sessions import (
    Publish,
    Reply,
    RunScore,
    SessionCore,
)
from webshepherd.protocol import requests as rq
from webshepherd.protocol.common import Timing

from tests.daemon.sessions.test_commits import FORM_OBS
from tests.daemon.sessions.test_machine import (
    MONITOR,
    OWNER,
    kinds,
    make_core,
    score_job,
    started,
    step_score,
)


def test_auto_decision_when_the_policy_is_happy():
    core = make_core()
    sid = started(core)
    job = score_job(core, sid)
    effects = core.score_done(job, step_score(0.4, 0.8), Timing(queue_ms=1, model_ms=2))
    assert kinds(effects) == [
        "record:score",
        "record:score_decision",
        "reply:scored",
        "publish:scored",
    ]
    reply = effects[2].message
    assert (reply.best, reply.decision.status, reply.decision.action) == (1, "auto", "click('2')")
    assert effects[3].event.candidates[1].action == "click('2')"


def test_drop_from_the_executed_candidate_asks_a_human():
    core = make_core()
    sid = started(core)
    core.score_done(score_job(core, sid), step_score(0.95, 0.5), Timing())
    act = core.action(OWNER, rq.Action(id="x1", session_id=sid, action="click('1')", thought="t"))
    assert kinds(act) == ["record:action", "reply:action.recorded", "publish:action"]
    core.observe(OWNER, rq.Observe(id="o", session_id=sid, url="u", axtree="a"))
    effects = core.score_done(score_job(core, sid), step_score(0.6, 0.5), Timing())
    assert effects[2].event.reason == "reward_drop"
    assert core.get(sid).history[-1].action == "click('1')"


def test_never_skips_the_gate_even_without_rewards():
    core = make_core()
    sid = started(core)
    effects = core.score_done(
        score_job(core, sid, approval="never"), step_score(None, None), Timing()
    )
    reply = effects[2].message
    assert (
        reply.best is None and reply.decision.status == "auto" and reply.results[0].reward is None
    )


def test_executed_action_scored_by_an_earlier_request_of_the_step_keeps_its_reward():
    """Refinement scores drafts one request at a time; the kept one may be an earlier draft."""
    core = make_core()
    sid = started(core)
    core.score_done(score_job(core, sid), step_score(0.9, 0.2), Timing())
    refined = core.score(
        OWNER, rq.Score(id="c2", session_id=sid, approval="never", candidates=[{"action": "x()"}])
    )
    (job,) = [e for e in refined if isinstance(e, RunScore)]
    core.score_done(job, step_score(0.4), Timing())
    core.action(OWNER, rq.Action(id="x1", session_id=sid, action="click('1')"))
    assert core.get(sid).step_rewards[0] == 0.9
    assert core.get(sid).previous_reward(1) == 0.9


def form_job(core: SessionCore, sid: str, action: str = "click('4')") -> RunScore:
    effects = core.score(
        OWNER,
        rq.Score(
            id="c1",
            session_id=sid,
            candidates=[{"action": action}, {"action": "click('9')"}],
            observation=FORM_OBS,
        ),
    )
    (job,) = [e for e in effects if isinstance(e, RunScore)]
    return job


def scored_of(effects):
    return next(e.message for e in effects if isinstance(e, Reply) and e.message.type == "scored")


@pytest.mark.parametrize(
    ("mode", "present", "holds", "status", "decider"),
    [
        ("ask", True, None, "held", None),
        ("ask", False, None, "rejected", "guard"),
        ("watch", True, None, "auto", "mode"),
        ("stop", True, None, "rejected", "mode"),
        ("ask", True, "browser", "auto", None),
        ("ask", False, "browser", "auto", None),
    ],
)
def test_the_rules_hold_by_the_mode_and_only_predict_where_the_browser_holds(
    mode, present, holds, status, decider
):
    core = make_core(mode=mode)
    core.connections.changed(MONITOR, person=present)
    effects = core.start(
        OWNER, rq.SessionStart(id="s1", intent="buy", checklist="1. buy", holds=holds)
    )
    sid = next(e.message.session_id for e in effects if isinstance(e, Reply))
    assert next(e.message for e in effects if isinstance(e, Reply)).holds == holds
    core.checklist_ready(sid, ParsedChecklist((ChecklistItem(1, "Buy"),), "1. Buy"))
    out = core.score_done(form_job(core, sid), step_score(0.9, 0.1), Timing(total_ms=1))
    if status == "held":
        (req,) = [e.event for e in out if isinstance(e, Publish)]
        assert req.reason == "guarded" and [h.rule for h in req.card.predicts] == ["form_submit"]
        assert req.card.headline == (
            "Waiting for you: this submits a POST form to shop.local/orders"
        )
        return
    got = scored_of(out)
    assert (got.decision.status, got.decision.decider, got.decision.mode) == (
        status,
        decider,
        mode,
    )
    assert [(p.index, [h.rule for h in p.hits]) for p in got.predicted] == [(0, ["form_submit"])]
    if status == "rejected":
        assert got.decision.way_out and "a person" not in got.decision.note
    if decider == "guard":
        assert "--no-guard form_submit" in got.decision.way_out
        assert "--sandbox-origin http://shop.local" in got.decision.way_out


def test_a_name_alone_holds_nothing_by_default():
    core = make_core()
    sid = started(core)
    out = core.score_done(
        form_job(core, sid, "click('5')"), step_score(0.9, 0.1), Timing(total_ms=1)
    )
    got = scored_of(out)
    assert got.decision.status == "auto" and got.predicted is None


@pytest.mark.parametrize(
    ("mode", "status"), [("ask", "held"), ("watch", "auto"), ("stop", "rejected")]
)
def test_a_low_reward_follows_the_mode(mode, status):
    core = make_core(mode=mode)  # a paired person is present (make_core's default)
    sid = started(core)
    out = core.score_done(score_job(core, sid), step_score(0.1, 0.05), Timing(total_ms=1))
    if status == "held":
        (req,) = [e.event for e in out if isinstance(e, Publish)]
        assert req.card.headline == "Waiting for you: the judge's reward 0.10 is below 0.3"
        return
    got = scored_of(out)
    assert (got.decision.status, got.decision.mode) == (status, mode)
    assert got.decision.decider == "mode"


def test_a_text_only_step_on_a_sandbox_page_runs_flagged_by_the_sandbox():
    core = make_core(sandbox_origins=("http://shop.local",))
    core.connections.closed(MONITOR)
    sid = started(core)
    got = scored_of(core.score_done(form_job(core, sid), step_score(0.9, 0.1), Timing(total_ms=1)))
    assert (got.decision.status, got.decision.decider) == ("auto", "sandbox")
    assert got.predicted and got.guarded is None


def test_coordinate_clicks_are_judged_on_their_box_or_predicted_as_unread():
    core = make_core(mode="watch")
    sid = started(core)
    out = core.score_done(
        form_job(core, sid, "mouse_click(5, 5)"), step_score(0.9, 0.1), Timing(total_ms=1)
    )
    (p,) = scored_of(out).predicted
    assert (p.index, p.hits) == (0, [])  # no boxes: the target is not known
    assert p.notes == ["mouse_click at (5, 5): target unknown (no element boxes were sent)"]
    boxed = {**FORM_OBS, "boxes": {"4": [0, 0, 10, 10]}}
    effects = core.score(
        OWNER,
        rq.Score(
            id="c2", session_id=sid, candidates=[{"action": "mouse_click(5, 5)"}],
            observation=boxed,
        ),
    )  # fmt: skip
    (job,) = [e for e in effects if isinstance(e, RunScore)]
    (p,) = scored_of(core.score_done(job, step_score(0.9), Timing(total_ms=1))).predicted
    assert [h.rule for h in p.hits] == ["form_submit"] and p.notes == []
