"""Big frames parsed and big events serialised in the offload worker process (issue 17,
item 2): the same messages, errors (with the request's id, issue 25) and recordings as
inline, and a worker that dies loses nothing."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest
from webshepherd.daemon.server.offload import OFF_PROCESS_BYTES, PARSE_OFF_LOOP_BYTES, Offload
from webshepherd.protocol.replies import Observed
from webshepherd.protocol.union import dump

from tests.fixtures.daemon import start_session
from tests.hostile.helpers import no_tracebacks

# escapes, quotes and non-ASCII text, above the worker's threshold
TREE = ("[7] link 'Caf\u00e9 \"\u2603\" \U0001f600'\n\t[8] StaticText '\\u00e9'\n" * 60_000)[
    : OFF_PROCESS_BYTES + 12_345
]


def _stored(daemon, sid: str) -> list[str]:
    db = sqlite3.connect(daemon.config.db_path)
    rows = db.execute(
        "SELECT axtree FROM observations WHERE session_id = ? ORDER BY step", (sid,)
    ).fetchall()
    return [r[0] for r in rows]


async def test_a_big_observe_goes_through_the_worker_recorded_and_fanned_out_intact(daemon, caplog):
    agent = await daemon.client()
    watcher = await daemon.client(name="watcher", max_size=None)
    assert (await watcher.request({"type": "subscribe", "sessions": "*"}))["type"] == "subscribed"
    sid = await start_session(agent)
    r = await agent.request(
        {"type": "observe", "session_id": sid, "url": "http://shop.local/2", "axtree": TREE},
        timeout=120,
    )
    assert (r["type"], r["step"]) == ("observed", 1)
    assert daemon.server.offload._worker is not None  # the frame was above the threshold
    event = await watcher.wait_for(lambda m: m["type"] == "observed" and m["step"] == 1, 120)
    assert event["axtree"] == TREE
    assert _stored(daemon, sid)[-1] == TREE
    no_tracebacks(caplog)


async def test_malformed_frames_of_every_size_answer_invalid_message_with_their_id(daemon, caplog):
    """Inline, on a thread and in the worker: the error carries the frame's id, also when
    the frame is cut short after it; a frame without one gets none."""
    c = await daemon.client()
    sid = await start_session(c)
    sizes = {"inline": 100_000, "thread": PARSE_OFF_LOOP_BYTES + 1000, "worker": len(TREE)}
    sent = []
    for where, size in sizes.items():
        tree = TREE[:size]
        sent.append((f"{where}-field", {"id": f"{where}-field", "url": 5, "axtree": tree}))
        cut = json.dumps({"type": "observe", "id": f"{where}-cut", "axtree": tree})[:-9]
        sent.append((f"{where}-cut", cut))
        sent.append((None, {"url": 5, "axtree": tree}))  # no id
    for _, frame in sent:
        if isinstance(frame, dict):
            frame = json.dumps({"type": "observe", "session_id": sid} | frame)
        await c.send(frame)
    for rid, _ in sent:
        err = await c.wait_for("error", 120)
        assert (err["code"], err["id"]) == ("invalid_message", rid), err
    assert daemon.server.offload._worker is not None
    assert (await c.request({"type": "ping"}))["type"] == "pong"
    assert _stored(daemon, sid) == [_stored(daemon, sid)[0]]  # nothing recorded
    no_tracebacks(caplog)


async def test_a_dead_worker_loses_no_frame_and_is_replaced(daemon):
    c = await daemon.client()
    sid = await start_session(c)
    obs = {"type": "observe", "session_id": sid, "url": "u", "axtree": TREE}
    assert (await c.request(obs, timeout=120))["step"] == 1
    first = daemon.server.offload._worker
    assert first is not None
    first.proc.kill()
    await asyncio.to_thread(first.proc.wait)
    assert (await c.request(obs, timeout=120))["step"] == 2  # parsed on a thread meanwhile
    assert (await c.request(obs, timeout=120))["step"] == 3  # a new worker
    second = daemon.server.offload._worker
    assert second is not None and second.proc.pid != first.proc.pid
    assert _stored(daemon, sid)[1:] == [TREE] * 3


@pytest.mark.parametrize("sample", ["a]", "caf\xe9", "\u2603", "\U0001f600"])
def test_the_worker_serialises_an_event_whose_tree_sqlite_has_bound(sample):
    """The recorder binds a tree (CPython then caches its UTF-8 in the object) before the
    event is serialised for subscribers: the worker gets the same characters."""
    tree = "".join([f"[1] link '{sample}'\n"] * (OFF_PROCESS_BYTES // 10))
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (x TEXT)")
    db.execute("INSERT INTO t VALUES (?)", (tree,))
    event = Observed(session_id="s1", step=1, url="u", axtree=tree)
    offload = Offload()
    try:
        frame = offload._dump_in_worker(event)
        assert offload._worker is not None
    finally:
        offload.close()
    assert frame == dump(event)
    assert json.loads(frame)["axtree"] == tree
