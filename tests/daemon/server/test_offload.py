"""Big frames parsed and big events serialised in the offload worker process, big payloads
gathered chunk by chunk (issue 17, item 2): the same messages, errors and recordings as
inline, and a worker that dies loses nothing."""

from __future__ import annotations

import asyncio
import gc
import json
import sqlite3

import pytest
from webshepherd.daemon.server.offload import (
    LIFT_CHARS,
    OFF_PROCESS_BYTES,
    Offload,
    PayloadConnection,
    gather_big_payloads,
    pack,
    unpack,
)
from webshepherd.protocol.replies import Observed
from webshepherd.protocol.union import dump
from websockets.asyncio.client import connect
from websockets.asyncio.server import serve
from websockets.frames import Frame, Opcode
from websockets.protocol import OPEN, SERVER, Protocol

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


async def test_big_malformed_frames_answer_invalid_message(daemon, caplog):
    c = await daemon.client()
    sid = await start_session(c)
    bad_field = {"type": "observe", "id": "b1", "session_id": sid, "url": 5, "axtree": TREE}
    await c.send(bad_field)
    not_json = '{"type": "observe", "id": "b2", "axtree": "' + "x" * OFF_PROCESS_BYTES
    await c.send(not_json)
    for _ in range(2):
        err = await c.wait_for("error", 120)
        assert err["code"] == "invalid_message", err
        assert err["id"] is None  # too big to look for an id
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


def _masked(payload: bytes) -> bytes:
    return Frame(Opcode.TEXT, payload).serialize(mask=True, extensions=[])


def test_big_payloads_are_gathered_whatever_the_chunks():
    small = [json.dumps({"type": "ping", "id": f"p{i}"}).encode() for i in range(3)]
    big = [TREE.encode(), ("y" * (3 << 20)).encode()]
    wire = b"".join(_masked(p) for p in [small[0], big[0], small[1], big[1], small[2]])
    for step in (7919, 65_536, 100_003, len(wire)):
        p = Protocol(SERVER, state=OPEN, max_size=None)
        gather_big_payloads(p.reader)
        got = []
        for i in range(0, len(wire), step):
            p.receive_data(wire[i : i + step])
            got += [e.data for e in p.events_received()]
        assert got == [small[0], big[0], small[1], big[1], small[2]], step
        assert not p.reader.buffer


async def test_a_connection_hands_big_payloads_over_as_gathered_in_order():
    """Big one-frame messages come back as views of the gathered payload (websockets' join
    would copy them), in order with small, fragmented and binary messages."""
    big_text, big_binary = TREE.encode(), bytes(range(256)) * 4096
    sent: list[bytes | list[bytes]] = [b"a", big_text, [b"frag", b"mented"], big_binary, b"z"]
    got: list[tuple[type, bytes]] = []
    done = asyncio.Event()

    async def handler(ws):
        ws.gather_big_payloads()
        await ws.send("gathering")  # from the next frame on, as the daemon after hello
        for _ in sent:
            raw = await ws.recv_payload()
            got.append((type(raw), bytes(raw)))
        done.set()

    opts = {"create_connection": PayloadConnection, "max_size": None, "compression": None}
    async with serve(handler, "127.0.0.1", 0, **opts) as server:  # as the daemon's
        port = server.sockets[0].getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}", max_size=None) as c:
            assert await c.recv() == "gathering"
            for m in sent:
                await c.send(m if isinstance(m, bytes) else iter(m))
            await asyncio.wait_for(done.wait(), 60)
    assert got == [
        (bytes, b"a"),
        (memoryview, big_text),
        (bytes, b"fragmented"),
        (memoryview, big_binary),
        (bytes, b"z"),
    ]


def _received(parts) -> memoryview:
    """The parts as the other side reads them: one writable buffer."""
    return memoryview(bytearray(b"".join(parts)))


def test_packed_objects_come_back_equal_big_strings_of_every_kind_lifted():
    big = {
        kind: "".join([sample] * (LIFT_CHARS // len(sample) + 1))
        for kind, sample in (
            ("ascii", "ab"),
            ("latin", "\xe9a"),
            ("bmp", "\u2603"),
            ("astral", "\U0001f600"),
        )
    }
    obj = {"small": "caf\xe9", "big": big, "again": [big["bmp"], big["bmp"]], "n": 3}
    parts = pack(obj)
    head = sum(len(p) for p in parts[:2])
    assert head < 1024  # the pickle holds none of the big strings
    assert len(parts) == 2 + 4  # the pickle's length, the pickle, each big string once
    got = unpack(_received(parts))
    assert got == obj
    assert got["again"][0] is got["again"][1] is got["big"]["bmp"]


def test_a_packed_temporary_stays_valid_once_dropped():
    """The worker packs what ``dump`` just returned: the parts keep its strings alive."""
    parts = pack(["\u2603 " * LIFT_CHARS, "caf\xe9 " * LIFT_CHARS])
    gc.collect()
    ["\xff" * (8 * LIFT_CHARS) for _ in range(4)]  # memory a freed string would give back
    assert unpack(_received(parts)) == ["\u2603 " * LIFT_CHARS, "caf\xe9 " * LIFT_CHARS]


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
