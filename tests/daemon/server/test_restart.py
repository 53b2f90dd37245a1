"""A daemon restart on the same data dir keeps every session; unfinished ones continue."""

from __future__ import annotations

import sqlite3

from tests.fixtures.daemon import CANDS, OBS, score_without_approval, start_session


async def test_restart_keeps_sessions_and_history(start_daemon, tmp_path):
    first = await start_daemon(base=tmp_path)
    agent = await first.client()
    sid = await start_session(agent)
    await agent.wait_for("checklist")
    scored = await score_without_approval(agent, sid)
    assert scored["type"] == "scored"
    await agent.request({"type": "action", "session_id": sid, "action": CANDS[0]["action"]})
    await first.close_clients()
    await first.server.stop()

    second = await start_daemon(base=tmp_path)
    monitor = await second.client(role="monitor")
    listed = await monitor.request({"type": "sessions.list"})
    assert [s["session_id"] for s in listed["sessions"]] == [sid]
    assert listed["sessions"][0]["state"] == "running" and listed["sessions"][0]["steps"] == 1
    got = await monitor.request({"type": "session.get", "session_id": sid})
    assert [e["type"] for e in got["events"]] == [
        "session.started",
        "observed",
        "checklist",
        "scored",
        "action",
    ]
    assert got["events"][3]["results"] == scored["results"]
    assert got["checklist"]["source"] == "reference"

    agent2 = await second.client()  # the unfinished session continues, loaded lazily
    obs = await agent2.request({"type": "observe", "session_id": sid, **OBS})
    assert (obs["type"], obs["step"]) == ("observed", 1)
    again = await agent2.request(
        {"type": "score", "session_id": sid, "candidates": CANDS, "approval": "never"}, timeout=60
    )
    assert again["type"] == "scored" and again["step"] == 1
    end = await agent2.request({"type": "session.end", "session_id": sid, "outcome": "failure"})
    assert end["type"] == "session.ended"

    db = sqlite3.connect(second.config.db_path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    samples = db.execute(
        "SELECT COUNT(*) FROM samples s JOIN score_requests r ON r.id = s.score_id "
        "WHERE r.session_id = ?",
        (sid,),
    ).fetchone()[0]
    assert samples == 2 * 2 + 2 * 1  # every sample's text of both score requests
    assert (
        db.execute("SELECT COUNT(*) FROM actions WHERE session_id = ?", (sid,)).fetchone()[0] == 1
    )
    assert (
        db.execute("SELECT outcome FROM sessions WHERE session_id = ?", (sid,)).fetchone()[0]
        == "failure"
    )


async def test_the_stall_count_survives_a_restart(tmp_path):
    """The stalled signal's count is rebuilt from the record: one step without progress
    before the restart and one after make k = 2 (the judge is scripted: no item advances)."""
    from webshepherd.protocol.client import AsyncClient

    from tests.fixtures.daemon import TEST_TOKEN
    from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon

    judge = ScriptedJudge(default=(0.4, (1,), "still searching"))
    agent = {"name": "a", "stalled_after": 2}

    async def step(c: AsyncClient, sid: str, n: int) -> list[str]:
        await c.observe(sid, f"http://a/{n}", f"[{n}] link 'Next'")
        await c.score(sid, [("", f"click('{n}')")], approval="never", samples=1)
        await c.report_action(sid, f"click('{n}')")
        got = await c.session(sid)
        return [f"{e['kind']}@{e['step']}" for e in got.events if e["type"] == "signal"]

    async with scripted_daemon(tmp_path, judge) as daemon, AsyncClient(daemon.url, TEST_TOKEN) as c:
        s = await c.start_session("Go", checklist="Checklist 1: Go", observation=OBS, agent=agent)
        assert await step(c, s.session_id, 1) == []  # item 1 to In Progress: an advance
        assert await step(c, s.session_id, 2) == []  # one step without progress
    async with scripted_daemon(tmp_path, judge) as daemon, AsyncClient(daemon.url, TEST_TOKEN) as c:
        assert await step(c, s.session_id, 3) == ["stalled@3"]  # the second, after the restart
