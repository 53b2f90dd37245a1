"""Modes and paused requests (sessions/commits.py): a request the browser paused is answered
by the session's mode and the sandbox origins, or waits for a paired person in 'ask'."""

from __future__ import annotations

import pytest
from webshepherd.daemon.sessions import (
    AwaitApproval,
    Publish,
    Record,
    Reply,
)
from webshepherd.protocol import requests as rq
from webshepherd.protocol.commits import request_digest
from webshepherd.protocol.errors import (
    ProtocolError,
    UnauthorizedError,
)

from tests.daemon.sessions.test_machine import (
    MONITOR,
    OWNER,
    POST,
    commit_check,
    kinds,
    make_core,
    started,
)

FORM_OBS = {
    "url": "http://shop.local/checkout",
    "axtree": "RootWebArea 'Checkout'\n\t[4] button 'Place order'\n\t[5] button 'Submit'",
    "elements": {
        "4": {"tag": "button", "submits": True, "form_method": "POST",
              "form_action": "http://shop.local/orders"},
        "5": {"tag": "button"},
    },
}  # fmt: skip


def decided(effects):
    """The commit.decided reply (to the requester) among ``effects``."""
    (reply,) = [e for e in effects if isinstance(e, Reply) and e.message.type == "commit.decided"]
    return reply.message


@pytest.mark.parametrize(
    ("mode", "present", "status", "decider", "flagged", "way_out"),
    [
        ("watch", True, "approved", "mode", True, None),
        ("watch", False, "approved", "mode", True, None),
        ("stop", True, "rejected", "mode", False, "switches this session to 'ask' or 'watch'"),
        ("stop", False, "rejected", "mode", False, "switches this session to 'ask' or 'watch'"),
        ("ask", False, "rejected", "daemon", False, "--sandbox-origin http://shop.local"),
    ],
)
def test_a_paused_request_is_answered_at_once_by_the_mode(
    mode, present, status, decider, flagged, way_out
):
    core = make_core(mode=mode)
    core.connections.changed(MONITOR, person=present)
    sid = started(core)
    effects = commit_check(core, sid)
    got = decided(effects)
    assert (got.decision.status, got.decision.decider, got.flagged) == (status, decider, flagged)
    assert got.decision.mode == mode and got.id == "q1"
    assert got.request_digest == request_digest(got.request)
    assert (got.decision.way_out is None) == (way_out is None)
    if way_out is not None:
        assert way_out in got.decision.way_out
    assert "a person" not in (got.decision.note or "")  # nobody decided
    assert not [e for e in effects if isinstance(e, AwaitApproval)]
    pub = next(e for e in effects if isinstance(e, Publish) and e.event.type == "commit.decided")
    assert pub.to_approvers and pub.exclude == OWNER
    rows = [e.op for e in effects if isinstance(e, Record)]
    # asked with nobody to ask: an approval row, as a guard's refusal is kept
    assert rows == (["approval_requested", "approval_decided"] if decider == "daemon" else [])


@pytest.mark.parametrize(("decision", "status"), [("approve", "approved"), ("reject", "rejected")])
def test_in_ask_a_paired_person_decides_a_paused_request(decision, status):
    core = make_core()
    sid = started(core)
    effects = commit_check(core, sid)
    (req,) = [e.event for e in effects if isinstance(e, Publish)]
    assert (req.type, req.reason, req.reward) == ("approval.request", "commit", None)
    assert req.candidate.action == "POST http://shop.local/orders"
    assert req.card.request.url == POST["url"]
    assert req.card.headline == "Waiting for you: this sends a POST to shop.local/orders"
    assert [e.timeout_s for e in effects if isinstance(e, AwaitApproval)] == [7.0]
    with pytest.raises(ProtocolError, match="'edit' does not apply"):
        core.decide(MONITOR, "tui", rq.ApprovalDecide(
            id="d0", request_id=req.request_id, decision="edit", action="click('1')"
        ))  # fmt: skip
    out = core.decide(
        MONITOR, "tui", rq.ApprovalDecide(id="d1", request_id=req.request_id, decision=decision)
    )
    got = decided(out)
    assert (got.decision.status, got.decision.decider, got.decision.by) == (status, "person", "tui")
    assert got.id == "q1" and not got.flagged
    assert next(e for e in out if isinstance(e, Reply) and e.conn == OWNER).message is got


def test_nobody_deciding_a_paused_request_in_time_refuses_it():
    core = make_core(approval_default="approve")  # never for a paused request
    sid = started(core)
    (req,) = [e.event for e in commit_check(core, sid) if isinstance(e, Publish)]
    got = decided(core.expire(req.request_id))
    assert (got.decision.status, got.decision.decider) == ("timeout", "timeout")
    assert "never let go by default" in got.decision.note and got.decision.way_out


def test_sandbox_origins_are_flagged_never_held():
    core = make_core(sandbox_origins=("http://shop.local",))
    sid = started(core)
    got = decided(commit_check(core, sid))
    assert (got.decision.status, got.decision.decider, got.flagged) == ("approved", "sandbox", True)
    # the origin is read from the URL, not from what the client says it is
    lying = {**POST, "url": "http://evil.test/x", "origin": "http://shop.local"}
    effects = core.commit_check(
        OWNER, rq.CommitCheck(id="q2", session_id=sid, request=lying), approver=None
    )
    assert [e.event.reason for e in effects if isinstance(e, Publish)] == ["commit"]  # asked


def test_only_the_owner_or_a_paired_person_asks_and_only_a_person_sets_the_mode():

    core = make_core(mode="watch")
    sid = started(core)
    with pytest.raises(UnauthorizedError, match=r"commit\.check"):
        commit_check(core, sid, conn=9)
    assert decided(commit_check(core, sid, conn=MONITOR, approver="extension")).flagged
    out = core.set_mode(MONITOR, "tui", rq.SessionMode(id="v1", session_id=sid, mode="stop"))
    assert kinds(out) == ["reply:mode.set", "publish:mode.set"]
    assert out[0].message.by == "tui" and out[1].to_approvers
    assert core.sessions[sid].summary().mode == "stop"
    assert decided(commit_check(core, sid)).decision.decider == "mode"
