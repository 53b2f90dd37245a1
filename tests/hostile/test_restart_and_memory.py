"""What a restart or an idle period must not lose (issue 14, item 12): open approvals are
closed cleanly and said so, signal state comes back from the record, and idle sessions leave
memory but stay readable and usable."""

from __future__ import annotations

import asyncio
import sqlite3

from tests.daemon.server.test_backpressure import until
from tests.fixtures.daemon import CANDS, OBS, start_session


async def test_an_approval_left_open_by_a_restart_is_closed_and_told(start_daemon, tmp_path):
    first = await start_daemon(base=tmp_path)
    agent = await first.client()
    approver = await first.client(role="extension", name="ext")
    sid = await start_session(agent)
    await agent.send(
        {
            "type": "score",
            "id": "s1",
            "session_id": sid,
            "candidates": CANDS,
            "samples": 1,
            "approval": "always",
        }
    )
    req = await approver.wait_for("approval.request", timeout=60)
    await first.close_clients()
    await first.server.stop()  # nobody decided

    second = await start_daemon(base=tmp_path)
    db = sqlite3.connect(second.config.db_path)
    row = db.execute(
        "SELECT decision, decided_by, note FROM approvals WHERE request_id = ?",
        (req["request_id"],),
    ).fetchone()
    assert row[0] == "timeout" and row[1] == "daemon" and "restarted" in row[2]
    agent2 = await second.client()
    got = await agent2.request({"type": "session.get", "session_id": sid})
    resolved = [e for e in got["events"] if e["type"] == "approval.resolved"]
    assert [e["request_id"] for e in resolved] == [req["request_id"]]
    late = await agent2.request(
        {"type": "approval.decide", "request_id": req["request_id"], "decision": "approve"}
    )
    assert late["type"] == "error"  # nothing is open any more


async def test_signal_state_survives_a_restart(start_daemon, tmp_path):
    first = await start_daemon(base=tmp_path)
    agent = await first.client()
    sid = await start_session(agent)
    await agent.request({"type": "action", "session_id": sid, "action": "click('2')"})
    await first.close_clients()
    await first.server.stop()

    second = await start_daemon(base=tmp_path)
    agent2 = await second.client()
    await agent2.request({"type": "subscribe", "sessions": [sid]})
    await agent2.request({"type": "action", "session_id": sid, "action": "click('2')"})
    sig = await agent2.wait_for("signal", timeout=30)
    assert sig["kind"] == "repeated_action" and sig["repeats"] == 2


async def test_idle_sessions_leave_memory_and_come_back(start_daemon):
    daemon = await start_daemon(idle_evict_s=0.3)
    agent = await daemon.client()
    sids = [await start_session(agent) for _ in range(20)]
    await agent.request({"type": "observe", "session_id": sids[0], **OBS})
    await until(lambda: not daemon.server.core.sessions)
    listed = await agent.request({"type": "sessions.list"})
    assert {s["session_id"] for s in listed["sessions"]} == set(sids)
    got = await agent.request({"type": "session.get", "session_id": sids[0]})
    # read back from the record: two pages observed, no step scored or acted at yet
    # (protocol/steps.py counts those), then the next observation counts on from the record
    assert got["session"]["session_id"] == sids[0] and got["session"]["steps"] == 0
    again = await agent.request({"type": "observe", "session_id": sids[0], **OBS})
    assert again["step"] == 2  # loaded from the record, counting on
    scored = await agent.request(
        {
            "type": "score",
            "session_id": sids[0],
            "candidates": CANDS,
            "samples": 1,
            "approval": "never",
        },
        timeout=60,
    )
    assert scored["type"] == "scored" and scored["step"] == 2
    await asyncio.sleep(0)
