"""Quotas over real sockets: per connection, session starts and observations in any 60 s and
model jobs queued or running; per session, the bytes it records. Past one, ``overloaded`` with
what was exceeded and the serve flag that raises it; other connections and sessions go on.
(Sessions pass reference checklists; the model's judgements do not matter here.)"""

from __future__ import annotations

import sqlite3

from tests.daemon.server.test_backpressure import gated_daemon, send_score
from tests.fixtures.daemon import OBS, start_session
from tests.fixtures.poll import until
from tests.hostile.helpers import no_tracebacks, still_serving


def _count(daemon, table: str) -> int:
    db = sqlite3.connect(daemon.config.db_path)
    return db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


async def test_session_starts_per_connection(start_daemon, caplog):
    daemon = await start_daemon(max_session_starts=3)
    a, b = await daemon.client(), await daemon.client()
    for _ in range(3):
        await start_session(a)
    refused = await a.request({"type": "session.start", "intent": "one more", "checklist": "x"})
    assert (refused["type"], refused["code"], refused["retryable"]) == ("error", "overloaded", True)
    assert "started 3 sessions in the last 60 s" in refused["message"]
    assert "--max-session-starts" in refused["message"]
    assert _count(daemon, "sessions") == 3  # nothing of the refused start was recorded
    await start_session(b)  # another connection has its own quota
    await still_serving(daemon)
    no_tracebacks(caplog)


async def test_observations_per_connection(start_daemon, caplog):
    daemon = await start_daemon(max_observations=4)
    a, b = await daemon.client(), await daemon.client()
    sid = await start_session(a)  # its inline observation is the first
    observe = {"type": "observe", "session_id": sid, **OBS}
    for step in (1, 2, 3):
        assert (await a.request(observe))["step"] == step
    refused = await a.request(observe)
    assert (refused["type"], refused["code"]) == ("error", "overloaded"), refused
    assert "4 observations" in refused["message"] and "--max-observations" in refused["message"]
    inline = await a.request(
        {
            "type": "score",
            "session_id": sid,
            "candidates": [{"action": "noop()"}],
            "observation": OBS,
        }
    )
    assert inline["code"] == "overloaded"  # an observation inline in score counts too
    assert _count(daemon, "observations") == 4
    sid_b = await start_session(b)
    assert (await b.request({**observe, "session_id": sid_b}))["type"] == "observed"
    no_tracebacks(caplog)


async def test_model_jobs_per_connection(start_daemon, daemon_engine, caplog):
    daemon, engine = await gated_daemon(start_daemon, daemon_engine, max_model_jobs=2)
    a, b = await daemon.client(), await daemon.client()
    sids = [await start_session(a) for _ in range(3)]
    await send_score(a, "s0", sids[0], "0")
    await until(engine.entered.is_set)
    await send_score(a, "s1", sids[1], "1")
    refused = await a.request(
        {"type": "score", "session_id": sids[2], "candidates": [{"action": "click('2')"}]}
    )
    assert (refused["type"], refused["code"]) == ("error", "overloaded"), refused
    assert "2 model jobs queued or running" in refused["message"]
    assert "--max-model-jobs" in refused["message"]
    # a session start that would queue a checklist generation is model work too
    start = await a.request({"type": "session.start", "intent": "Buy", "observation": OBS})
    assert start["code"] == "overloaded"
    sid_b = await start_session(b)  # another connection is not held back
    await send_score(b, "sb", sid_b, "b")
    engine.gate.set()
    for c, rid in ((a, "s0"), (a, "s1"), (b, "sb")):
        assert (await c.wait_for(lambda m, rid=rid: m.get("id") == rid, 120))["type"] == "scored"
    await until(lambda: daemon.server.quotas.jobs(1) == 0)  # done jobs no longer count
    again = await a.request(
        {"type": "score", "session_id": sids[2], "candidates": [{"action": "click('2')"}]},
        timeout=120,
    )
    assert again["type"] == "scored", again
    no_tracebacks(caplog)


async def test_recorded_bytes_per_session_also_after_a_restart(start_daemon, tmp_path, caplog):
    limit = 1024 * 1024
    first = await start_daemon(base=tmp_path, max_session_bytes=limit)
    a = await first.client()
    sid = await start_session(a)
    tree = "x" * (600 * 1024)
    observe = {"type": "observe", "session_id": sid, "url": OBS["url"], "axtree": tree}
    assert (await a.request(observe))["type"] == "observed"
    refused = await a.request(observe)
    assert (refused["code"], refused["retryable"]) == ("overloaded", False), refused
    assert "past its limit of 1 MiB" in refused["message"]
    assert "--max-session-mib" in refused["message"] and "start a new session" in refused["message"]
    small = await a.request({**observe, "axtree": OBS["axtree"]})
    assert small["type"] == "observed"  # what still fits is taken
    other = await start_session(a)
    assert (await a.request({**observe, "session_id": other}))["type"] == "observed"
    await first.server.stop()

    # a restarted daemon counts what the recording already holds
    second = await start_daemon(base=tmp_path, max_session_bytes=limit)
    c = await second.client()
    again = await c.request(observe)
    assert again["code"] == "overloaded" and "has recorded 0.6 MiB" in again["message"]
    await still_serving(second)
    no_tracebacks(caplog)
