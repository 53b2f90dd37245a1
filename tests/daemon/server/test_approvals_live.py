"""Human approvals over real sockets: approve, reject, edit, timeout, and a late second decision."""

from __future__ import annotations

import pytest

from tests.fixtures.daemon import CANDS, start_session


async def ask(daemon, approval: str = "always"):
    agent = await daemon.client(name="agent-1")
    monitor = await daemon.client(role="monitor", name="tui")
    extension = await daemon.client(role="extension", name="ext")
    sid = await start_session(agent)
    await agent.send(
        {
            "type": "score",
            "id": "c1",
            "session_id": sid,
            "candidates": CANDS,
            "samples": 1,
            "approval": approval,
        }
    )
    req = await monitor.wait_for("approval.request", timeout=60)
    assert (await extension.wait_for("approval.request"))["request_id"] == req["request_id"]
    assert req["session_id"] == sid and req["reason"] == "always" and req["candidate"]["action"]
    assert not [m for m in agent.inbox if m["type"] == "scored"]  # the reply waits
    return agent, monitor, extension, req


@pytest.mark.parametrize(
    ("decision", "action", "status"),
    [
        ("approve", None, "approved"),
        ("reject", None, "rejected"),
        ("edit", "click('99')", "edited"),
    ],
)
async def test_decisions(daemon, decision, action, status):
    agent, monitor, extension, req = await ask(daemon)
    reply = await monitor.request(
        {
            "type": "approval.decide",
            "request_id": req["request_id"],
            "decision": decision,
            "action": action,
            "note": "checked",
        }
    )
    assert reply["type"] == "approval.resolved" and reply["by"] == "monitor:tui"
    resolved = await extension.wait_for("approval.resolved")
    assert (resolved["decision"], resolved["by"]) == (decision, "monitor:tui")
    scored = await agent.wait_for("scored", timeout=30)
    d = scored["decision"]
    assert (d["status"], d["by"], d["note"]) == (status, "monitor:tui", "checked")
    expected = {"approve": req["candidate"]["action"], "reject": None, "edit": "click('99')"}[
        decision
    ]
    assert d["action"] == expected and d["index"] == req["candidate_index"]
    late = await extension.request(
        {"type": "approval.decide", "request_id": req["request_id"], "decision": "approve"}
    )
    assert (late["type"], late["code"]) == ("error", "invalid_message")
    assert "already resolved" in late["message"] and "first decision wins" in late["message"]
    history = await monitor.request({"type": "session.get", "session_id": scored["session_id"]})
    types = [e["type"] for e in history["events"]]
    assert (
        types.index("approval.request") < types.index("approval.resolved") < types.index("scored")
    )


async def test_timeout_applies_the_default(start_daemon):
    daemon = await start_daemon(approval_timeout_s=0.5)
    agent, monitor, _, req = await ask(daemon)
    assert req["expires_in_s"] == 0.5
    scored = await agent.wait_for("scored", timeout=30)
    assert (scored["decision"]["status"], scored["decision"]["action"]) == ("timeout", None)
    resolved = await monitor.wait_for("approval.resolved")
    assert resolved["decision"] == "timeout"
    late = await monitor.request(
        {"type": "approval.decide", "request_id": req["request_id"], "decision": "approve"}
    )
    assert late["code"] == "invalid_message"


async def test_auto_policy_asks_below_the_threshold(start_daemon):
    daemon = await start_daemon(approval_threshold=1.01)  # any reward is below: always asks
    agent, monitor, _, _ = await ask_auto(daemon)
    assert agent and monitor


async def ask_auto(daemon):
    agent = await daemon.client()
    monitor = await daemon.client(role="monitor", name="tui")
    sid = await start_session(agent)
    await agent.send(
        {"type": "score", "id": "c1", "session_id": sid, "candidates": CANDS, "samples": 1}
    )
    req = await monitor.wait_for("approval.request", timeout=60)
    assert req["reason"] == "below_threshold"
    await monitor.request(
        {"type": "approval.decide", "request_id": req["request_id"], "decision": "approve"}
    )
    scored = await agent.wait_for("scored", timeout=30)
    assert scored["decision"]["status"] == "approved"
    return agent, monitor, None, req


async def test_an_agent_connection_may_not_decide(daemon):
    """The agent (or anything on an agent's connection) cannot approve its own step: the
    decision is refused, the request stays open, and a person's decision still goes through."""
    agent, monitor, extension, req = await ask(daemon)
    other_agent = await daemon.client(name="agent-2")
    for c in (agent, other_agent):
        refused = await c.request(
            {"type": "approval.decide", "request_id": req["request_id"], "decision": "approve"}
        )
        assert (refused["type"], refused["code"]) == ("error", "unauthorized"), refused
        assert "may not decide" in refused["message"] and "'agent'" in refused["message"]
    assert not [m for m in agent.inbox if m["type"] == "scored"]  # still waiting for a person
    reply = await extension.request(
        {
            "type": "approval.decide",
            "request_id": req["request_id"],
            "decision": "reject",
            "via": "panel",
        }
    )
    assert reply["type"] == "approval.resolved", reply
    scored = await agent.wait_for("scored", timeout=30)
    assert (scored["decision"]["status"], scored["decision"]["by"]) == (
        "rejected",
        "extension:ext/panel",
    )
    history = await monitor.request({"type": "session.get", "session_id": scored["session_id"]})
    resolved = [e for e in history["events"] if e["type"] == "approval.resolved"]
    assert [e["by"] for e in resolved] == ["extension:ext/panel"]


async def test_the_place_of_a_decision_is_checked(daemon):
    _, _, extension, req = await ask(daemon)
    bad = await extension.request(
        {
            "type": "approval.decide",
            "request_id": req["request_id"],
            "decision": "approve",
            "via": "Panel <b>",
        }
    )
    assert (bad["type"], bad["code"]) == ("error", "invalid_message") and "via" in bad["message"]
