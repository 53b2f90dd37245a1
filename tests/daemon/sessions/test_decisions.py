"""Approval requests resolved (sessions/decisions.py): a person's decision or a timeout
releases the held step's ``scored``."""

from __future__ import annotations

import pytest
from webshepherd.daemon.sessions import (
    ApprovalClosed,
    AwaitApproval,
    Reply,
)
from webshepherd.protocol import requests as rq
from webshepherd.protocol.common import Timing
from webshepherd.protocol.errors import (
    ProtocolError,
)

from tests.daemon.sessions.test_machine import (
    MONITOR,
    OWNER,
    kinds,
    make_core,
    score_job,
    started,
    step_score,
)


def test_low_reward_asks_a_human_and_the_decision_releases_scored():
    core = make_core()
    sid = started(core)
    job = score_job(core, sid)
    effects = core.score_done(job, step_score(0.1, 0.2), Timing())
    assert kinds(effects) == [
        "record:score",
        "record:approval_requested",
        "publish:approval.request",
        "AwaitApproval",
    ]
    req = effects[2].event
    assert effects[2].to_approvers and req.reason == "below_threshold" and req.candidate_index == 1
    assert isinstance(effects[3], AwaitApproval) and effects[3].timeout_s == 7.0
    assert core.get(sid).summary().state == "waiting_approval"
    assert core.approval_session(req.request_id) == sid
    out = core.decide(
        MONITOR,
        "monitor:tui",
        rq.ApprovalDecide(id="d1", request_id=req.request_id, decision="edit", action="click('3')"),
    )
    assert kinds(out) == [
        "record:approval_decided",
        "publish:approval.resolved",
        "reply:approval.resolved",
        "ApprovalClosed",
        "record:score_decision",
        "reply:scored",
        "publish:scored",
    ]
    scored = out[5]
    assert scored.conn == OWNER and scored.message.id == "c1"
    assert core.approval_session(req.request_id) is None  # closed
    d = scored.message.decision
    assert (d.status, d.action, d.by) == ("edited", "click('3')", "monitor:tui")
    assert out[2].conn == MONITOR and out[2].message.id == "d1"
    with pytest.raises(ProtocolError, match="first decision wins"):
        core.decide(
            OWNER,
            "agent:x",
            rq.ApprovalDecide(id="d2", request_id=req.request_id, decision="approve"),
        )
    assert core.get(sid).summary().state == "running"


def test_timeout_rejects_by_default():
    core = make_core()
    sid = started(core)
    effects = core.score_done(score_job(core, sid, approval="always"), step_score(0.9), Timing())
    rid = effects[2].event.request_id
    assert effects[2].event.reason == "always"
    out = core.expire(rid)
    scored = next(e for e in out if isinstance(e, Reply)).message
    assert (scored.decision.status, scored.decision.action) == ("timeout", None)
    assert any(isinstance(e, ApprovalClosed) for e in out)
    assert core.expire(rid) == []
