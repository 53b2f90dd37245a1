"""Heavy but valid use (issue 14, items 2, 3, 5 and 12): a client that reads never loses a
reply, a stalled one costs a bounded number of bytes, progress never costs a reply, state
advances only with a durable record, and an AX tree is stored once."""

from __future__ import annotations

import asyncio
import json
import sqlite3

from tests.daemon.server.test_backpressure import StalledClient, until
from tests.fixtures.daemon import CANDS, OBS, start_session
from tests.hostile.helpers import burst, no_tracebacks, replies


async def test_300_pipelined_pings_get_300_pongs(daemon, caplog):
    c = await daemon.client()
    ids = [f"p{i}" for i in range(300)]
    burst(c.ws, [json.dumps({"type": "ping", "id": i}) for i in ids])
    got = await replies(c, ids)
    assert all(got[i]["type"] == "pong" for i in ids)
    assert (await c.request({"type": "ping"}))["type"] == "pong"  # not closed
    no_tracebacks(caplog)


async def test_400_pipelined_observes_all_acknowledged_and_recorded(daemon, caplog):
    c = await daemon.client()
    sid = await start_session(c)
    ids = [f"o{i}" for i in range(400)]
    burst(c.ws, [json.dumps({"type": "observe", "id": i, "session_id": sid, **OBS}) for i in ids])
    got = await replies(c, ids)
    assert [got[i]["step"] for i in ids] == list(range(1, 401))
    db = sqlite3.connect(daemon.config.db_path)
    n = db.execute("SELECT COUNT(*) FROM observations WHERE session_id = ?", (sid,)).fetchone()
    assert n[0] == 401  # the start's observation and the 400
    no_tracebacks(caplog)


async def test_a_stalled_subscriber_costs_bounded_bytes_then_1013(start_daemon):
    bound = 2 * 1024 * 1024
    daemon = await start_daemon(send_queue_bytes=bound, slow_consumer_s=1.0, stats_interval_s=60)
    slow = await asyncio.to_thread(StalledClient.subscribed, daemon.server.port, "frozen")
    agent = await daemon.client()
    sid = await start_session(agent)
    frozen = next(c for c in daemon.server.hub.conns.values() if c.client_name == "frozen")
    tree = "x" * (1024 * 1024)
    worst = 0
    for i in range(20):
        r = await agent.request(
            {"type": "observe", "session_id": sid, "url": f"u{i}", "axtree": tree}
        )
        assert r["type"] == "observed"
        worst = max(worst, frozen.queued[1])
    assert worst <= bound + len(tree) + 4096  # at most one frame past the bound
    await until(lambda: frozen.closed)
    assert await asyncio.to_thread(slow.read_until_closed) == 1013
    assert (await agent.request({"type": "ping"}))["type"] == "pong"


async def test_progress_never_costs_the_reply(start_daemon, caplog):
    daemon = await start_daemon(send_queue_size=8, slow_consumer_s=0.3)
    c = await daemon.client()
    sid = await start_session(c)
    cands = [{"thought": f"t{i}", "action": f"click('{i}')"} for i in range(8)]
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await c.send(
        {
            "type": "score",
            "id": "big",
            "session_id": sid,
            "candidates": cands,
            "samples": 2,
            "approval": "never",
        }
    )
    progress = 0
    while True:
        m = await c.recv(120)
        if m["type"] == "score.progress":
            progress += 1
        elif m.get("id") == "big":
            break
    elapsed = loop.time() - t0
    assert m["type"] == "scored", m
    rows = sum(len(r["samples"]) for r in m["results"])
    # coalesced: at most one frame per row per 50 ms flush, not one per token
    assert rows == 16 and progress <= rows * (elapsed / 0.05 + 2)
    assert (await c.request({"type": "ping"}))["type"] == "pong"
    no_tracebacks(caplog)


async def test_a_failed_write_leaves_the_session_as_it_was(daemon):
    c = await daemon.client()
    sid = await start_session(c)
    first = await c.request({"type": "observe", "session_id": sid, **OBS})
    assert first["step"] == 1
    rec = daemon.server.recorder
    pages = rec.db.execute("PRAGMA page_count").fetchone()[0]
    rec.db.execute(f"PRAGMA max_page_count = {pages + 1}")  # the disk is full
    big = {"type": "observe", "session_id": sid, "url": "http://full/", "axtree": "y" * 200_000}
    failed = await c.request(big)
    assert (failed["type"], failed["code"]) == ("error", "internal")
    rec.db.execute("PRAGMA max_page_count = 1073741823")
    again = await c.request({"type": "observe", "session_id": sid, **OBS})
    assert again["step"] == 2  # the failed observation did not advance the step
    st = daemon.server.core.sessions[sid]
    assert st.url == OBS["url"] and st.axtree == OBS["axtree"]
    db = sqlite3.connect(daemon.config.db_path)
    steps = [
        r[0]
        for r in db.execute(
            "SELECT step FROM observations WHERE session_id = ? ORDER BY id", (sid,)
        )
    ]
    assert steps == [0, 1, 2]


async def test_an_observation_tree_is_stored_once(daemon):
    c = await daemon.client()
    sid = await start_session(c)
    tree = "[5] StaticText 'once'\n" * 1000
    await c.request({"type": "observe", "session_id": sid, "url": "http://a/", "axtree": tree})
    db = sqlite3.connect(daemon.config.db_path)
    bodies = [r[0] for r in db.execute("SELECT body FROM events WHERE session_id = ?", (sid,))]
    assert bodies and not any("StaticText 'once'" in b for b in bodies)
    monitor = await daemon.client(role="monitor")
    got = await monitor.request({"type": "session.get", "session_id": sid})
    observed = [e for e in got["events"] if e["type"] == "observed"]
    assert [e["axtree"] for e in observed] == [OBS["axtree"], tree]


async def test_a_failed_decision_write_leaves_the_request_open(daemon):
    agent = await daemon.client()
    approver = await daemon.client(role="extension", name="ext")
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
    rec = daemon.server.recorder
    pages = rec.db.execute("PRAGMA page_count").fetchone()[0]
    rec.db.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full
    decide = {
        "type": "approval.decide",
        "request_id": req["request_id"],
        "decision": "approve",
        "note": "n" * 50_000,
    }
    failed = await approver.request(decide)
    assert (failed["type"], failed["code"]) == ("error", "internal")
    rec.db.execute("PRAGMA max_page_count = 1073741823")
    ok = await approver.request(decide)  # still open: the same decision goes through now
    assert ok["type"] == "approval.resolved"
    scored = await agent.wait_for(lambda m: m.get("id") == "s1", timeout=60)
    assert scored["decision"]["status"] == "approved"
