"""No session is left without a checklist (issue 14, item 4): a client's checklist is
recorded with the start, a burst of starts gets ``overloaded`` with its request id and no
half-started session, and a generation that did not finish is tried again."""

from __future__ import annotations

import json
import sqlite3
import threading

from webshepherd.daemon.engine.engine import Engine

from tests.daemon.server.test_backpressure import GatedEngine, until
from tests.fixtures.daemon import CANDS, OBS, REFERENCE, engine_like
from tests.hostile.helpers import burst, replies


class WritesReference(Engine):
    """The real engine whose checklist generation gives the reference checklist: these tests
    are about the daemon retrying and recording generations, and whether the tiny model writes
    a parseable checklist depends on how many steps it trained (the machine's speed)."""

    def make_checklist(self, *a, **kw):
        return self.parse_reference_checklist(REFERENCE)


def _rows(daemon, sql: str) -> int:
    return sqlite3.connect(daemon.config.db_path).execute(sql).fetchone()[0]


async def test_1000_starts_with_a_checklist_all_start_with_it(daemon):
    c = await daemon.client()
    ids = [f"s{i}" for i in range(1000)]
    start = {"type": "session.start", "intent": "burst", "observation": OBS, "checklist": REFERENCE}
    burst(c.ws, [json.dumps({**start, "id": i}) for i in ids])
    got = await replies(c, ids, timeout=120)
    assert {m["type"] for m in got.values()} == {"session.started"}
    assert _rows(daemon, "SELECT COUNT(*) FROM sessions") == 1000
    assert _rows(daemon, "SELECT COUNT(*) FROM checklists") == 1000  # recorded with the start


async def test_a_burst_without_checklists_overloaded_with_id_and_no_half_sessions(
    start_daemon, daemon_engine
):
    engine = engine_like(GatedEngine, daemon_engine)
    engine.gate.set()
    hold = threading.Event()
    make = engine_like(WritesReference, daemon_engine).make_checklist

    def slow_checklist(*a, **kw):
        hold.wait(30)
        return make(*a, **kw)

    engine.make_checklist = slow_checklist
    daemon = await start_daemon(engine=engine, queue_limit=4)
    c = await daemon.client()
    ids = [f"s{i}" for i in range(50)]
    start = {"type": "session.start", "intent": "burst", "observation": OBS}
    burst(c.ws, [json.dumps({**start, "id": i}) for i in ids])
    got = await replies(c, ids)
    started = [i for i in ids if got[i]["type"] == "session.started"]
    refused = [i for i in ids if got[i].get("code") == "overloaded"]
    assert len(started) + len(refused) == 50 and refused
    assert all(got[i]["retryable"] for i in refused)
    assert _rows(daemon, "SELECT COUNT(*) FROM sessions") == len(started)
    hold.set()
    await until(lambda: _rows(daemon, "SELECT COUNT(*) FROM checklists") == len(started), 60)


class FailsOnce(WritesReference):
    """The engine whose first checklist generation fails."""

    failed = False

    def make_checklist(self, *a, **kw):
        if not self.failed:
            self.failed = True
            raise RuntimeError("out of memory (once)")
        return super().make_checklist(*a, **kw)


async def test_a_failed_generation_is_tried_again_by_the_next_score(start_daemon, daemon_engine):
    daemon = await start_daemon(engine=engine_like(FailsOnce, daemon_engine))
    c = await daemon.client()
    r = await c.request({"type": "session.start", "intent": "Buy a cable", "observation": OBS})
    sid = r["session_id"]
    err = await c.wait_for("error", timeout=60)
    assert err["code"] == "model_error"
    scored = await c.request(
        {"type": "score", "session_id": sid, "candidates": CANDS, "approval": "never"}, timeout=60
    )
    assert scored["type"] == "scored", scored
    assert _rows(daemon, "SELECT COUNT(*) FROM checklists") == 1


async def test_a_generation_cut_by_a_restart_is_done_after_it(
    start_daemon, daemon_engine, tmp_path
):
    engine = engine_like(GatedEngine, daemon_engine)
    engine.gate.set()
    hold = threading.Event()
    engine.make_checklist = lambda *a, **kw: (hold.wait(30), None)[1]  # never finishes
    first = await start_daemon(engine=engine, base=tmp_path)
    c = await first.client()
    r = await c.request({"type": "session.start", "intent": "Buy a cable", "observation": OBS})
    sid = r["session_id"]
    await first.close_clients()
    hold.set()
    await first.server.stop()
    assert _rows(first, "SELECT COUNT(*) FROM checklists") == 0

    second = await start_daemon(engine=engine_like(WritesReference, daemon_engine), base=tmp_path)
    c2 = await second.client()
    scored = await c2.request(
        {"type": "score", "session_id": sid, "candidates": CANDS, "approval": "never"}, timeout=60
    )
    assert scored["type"] == "scored", scored
    assert _rows(second, "SELECT COUNT(*) FROM checklists") == 1
