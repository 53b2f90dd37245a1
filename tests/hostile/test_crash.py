"""kill -9 at random points of a scripted session (issue 14): a real ``webshepherd serve``
subprocess (tiny model) is killed with SIGKILL while a client works, restarted on the same
data dir; every message the daemon acknowledged is in the record afterwards."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import signal
import sqlite3

from websockets.asyncio.client import connect

from tests.fixtures.daemon import OBS, REFERENCE, TEST_TOKEN
from tests.fixtures.poll import until
from tests.fixtures.ports import closed_port
from tests.fixtures.serve_process import serve_process as _serve


async def _script(url: str, acked: dict[str, set], rng: random.Random) -> None:
    """Start a session and observe/act until killed; record what was acknowledged."""
    async with connect(url, max_size=None) as ws:
        n = 0

        async def request(msg: dict) -> dict:
            nonlocal n
            n += 1
            await ws.send(json.dumps({**msg, "id": f"r{n}"}))
            while True:
                reply = json.loads(await ws.recv())
                if reply.get("id") == f"r{n}":
                    return reply

        hello = {
            "type": "hello",
            "protocol": 1,
            "token": TEST_TOKEN,
            "client": {"name": "crash", "role": "agent"},
        }
        assert (await request(hello))["type"] == "welcome"
        r = await request(
            {
                "type": "session.start",
                "intent": "Buy a cable",
                "observation": OBS,
                "checklist": REFERENCE,
            }
        )
        sid = r["session_id"]
        acked["sessions"].add(sid)
        acked["checklists"].add(sid)
        while True:
            tree = OBS["axtree"] + "\n" + "x" * rng.randrange(10, 200_000)
            o = await request(
                {"type": "observe", "session_id": sid, "url": OBS["url"], "axtree": tree}
            )
            acked["observations"].add((sid, o["step"]))
            a = await request({"type": "action", "session_id": sid, "action": "click('2')"})
            acked["actions"].add((sid, a["step"]))


async def test_acknowledged_rows_survive_kill_9(tmp_path, tiny_model_path):
    rng = random.Random(14)
    data = tmp_path / "data"
    acked: dict[str, set] = {
        k: set() for k in ("sessions", "checklists", "observations", "actions")
    }
    rounds = 0
    # at least 4 kills, at random moments; more while a loaded machine got too little done
    while rounds < 4 or len(acked["observations"]) <= 10:
        assert rounds < 12, f"12 rounds acknowledged only {len(acked['observations'])} steps"
        rounds += 1
        port = closed_port()
        proc = await _serve(tiny_model_path, data, port)
        task = asyncio.get_running_loop().create_task(
            _script(f"ws://127.0.0.1:{port}/v1", acked, rng)
        )
        await asyncio.sleep(rng.uniform(0.3, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
    proc = await _serve(tiny_model_path, data, closed_port())  # a restart reads the record
    proc.send_signal(signal.SIGTERM)
    proc.wait(30)
    db = sqlite3.connect(data / "webshepherd.sqlite3")
    recorded = {
        "sessions": {r[0] for r in db.execute("SELECT session_id FROM sessions")},
        "checklists": {r[0] for r in db.execute("SELECT session_id FROM checklists")},
        "observations": set(db.execute("SELECT session_id, step FROM observations")),
        "actions": set(db.execute("SELECT session_id, step FROM actions")),
    }
    lost = {k: acked[k] - recorded[k] for k in acked}
    assert not any(lost.values()), lost


async def test_after_kill_9_a_paused_request_is_decided_by_the_mode(tmp_path, tiny_model_path):
    """Approval request ids never repeat across restarts (issue 49): a paused request refused
    before a SIGKILL left its approval row; after the restart on the same data dir a new one in
    the same session is answered by the mode ('ask', nobody paired: the daemon refuses it,
    saying so), never by an internal error on the recorded id."""
    from webshepherd.protocol.client import AsyncClient
    from webshepherd.protocol.commits import held_request

    data = tmp_path / "data"
    post = held_request(
        "POST", "http://shop.test/orders", "write", page_url=OBS["url"], trigger="click('2')"
    )
    port = closed_port()
    proc = await _serve(tiny_model_path, data, port)
    try:
        async with AsyncClient(f"ws://127.0.0.1:{port}/v1", TEST_TOKEN) as agent:
            session = await agent.start_session(
                "Buy a cable", observation=OBS, checklist=REFERENCE, holds="browser"
            )
            sid = session.session_id
            first = await agent.commit_check(sid, post, timeout=30)
            assert (first.decision.status, first.decision.decider) == ("rejected", "daemon")
            db = sqlite3.connect(data / "webshepherd.sqlite3")
            recorded = await until(
                lambda: db.execute("SELECT request_id FROM approvals").fetchall(),
                what="the refused request's approval row",
            )
            db.close()
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    port = closed_port()
    proc = await _serve(tiny_model_path, data, port)
    try:
        async with AsyncClient(f"ws://127.0.0.1:{port}/v1", TEST_TOKEN) as agent:
            again = await agent.commit_check(sid, post, timeout=30)
            assert (again.decision.status, again.decision.decider) == ("rejected", "daemon")
            assert again.decision.mode == "ask"
            assert "no person is paired" in (again.decision.note or "")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    db = sqlite3.connect(data / "webshepherd.sqlite3")
    ids = [
        r[0] for r in db.execute("SELECT request_id FROM approvals WHERE session_id = ?", (sid,))
    ]
    assert len(ids) == 2 and len(set(ids)) == 2 and ids[0] == recorded[0][0], ids
