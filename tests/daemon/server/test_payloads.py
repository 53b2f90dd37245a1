"""Big client frames gathered by the connection as they arrive (issue 17, item 2), through
``serve(create_connection=...)`` only: nothing in websockets is replaced (issue 25)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from webshepherd.daemon.server.payloads import GATHER_BYTES, PayloadConnection, PayloadSplitter
from websockets.asyncio.client import connect
from websockets.asyncio.server import serve
from websockets.frames import Frame, Opcode
from websockets.protocol import OPEN, SERVER, Protocol

STAND_IN = b"stand-in-0123456789"
REQUEST = b"GET /v1 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n\r\n"
BIG_TEXT = ("[7] link 'Caf\u00e9 \u2603 \U0001f600'\n" * 40_000).encode()
BIG_BINARY = bytes(range(256)) * 1500
SMALL = [json.dumps({"type": "ping", "id": f"p{i}"}).encode() for i in range(3)]


def _masked(opcode: Opcode, payload: bytes, fin: bool = True) -> bytes:
    return Frame(opcode, payload, fin=fin).serialize(mask=True, extensions=[])


# (the frame a client sends, what websockets should read for it when gathering)
FRAMES = [
    (_masked(Opcode.TEXT, SMALL[0]), (Opcode.TEXT, SMALL[0])),
    (_masked(Opcode.TEXT, BIG_TEXT), (Opcode.TEXT, STAND_IN)),
    (_masked(Opcode.PING, b"hi"), (Opcode.PING, b"hi")),
    # a fragmented message goes through as sent, however big its fragments
    (_masked(Opcode.TEXT, BIG_TEXT[:GATHER_BYTES], fin=False), (Opcode.TEXT, None)),
    (_masked(Opcode.CONT, BIG_TEXT[GATHER_BYTES:]), (Opcode.CONT, None)),
    (_masked(Opcode.BINARY, BIG_BINARY), (Opcode.BINARY, STAND_IN)),
    (_masked(Opcode.TEXT, SMALL[1]), (Opcode.TEXT, SMALL[1])),
    (_masked(Opcode.TEXT, b""), (Opcode.TEXT, b"")),
    (_masked(Opcode.TEXT, SMALL[2]), (Opcode.TEXT, SMALL[2])),
]
FRAGMENTS = {0: BIG_TEXT[:GATHER_BYTES], 1: BIG_TEXT[GATHER_BYTES:]}


def _through(splitter: PayloadSplitter, stream: bytes, step: int) -> bytes:
    return b"".join(
        b"".join(splitter.feed(stream[i : i + step])) for i in range(0, len(stream), step)
    )


def _read(frames: bytes) -> list[tuple[Opcode, bytes]]:
    """What websockets reads from a client's frames."""
    p = Protocol(SERVER, state=OPEN, max_size=None)
    p.receive_data(frames)
    return [(e.opcode, bytes(e.data)) for e in p.events_received()]


@pytest.mark.parametrize("step", [101, 7919, 65_536, 262_144, 10**9])
def test_big_one_frame_messages_are_gathered_in_order_whatever_the_chunks(step):
    splitter = PayloadSplitter(STAND_IN)
    splitter.gather(len(BIG_TEXT))
    out = _through(splitter, REQUEST + b"".join(f for f, _ in FRAMES), step)
    assert out.startswith(REQUEST)
    fragments = iter(FRAGMENTS.values())
    want = [(op, data if data is not None else next(fragments)) for _, (op, data) in FRAMES]
    assert _read(out[len(REQUEST) :]) == want
    assert [bytes(p) for p in splitter.payloads] == [BIG_TEXT, BIG_BINARY]


def test_a_byte_at_a_time_through_the_request_and_headers():
    small = [f for f, (_, data) in FRAMES if data is not None and data != STAND_IN]
    splitter = PayloadSplitter(STAND_IN)
    splitter.gather(1 << 20)
    out = _through(splitter, REQUEST + b"".join(small), 1)
    assert out == REQUEST + b"".join(small)


def test_nothing_is_gathered_before_gather_nor_past_the_limit():
    stream = REQUEST + b"".join(f for f, _ in FRAMES)
    idle = PayloadSplitter(STAND_IN)
    assert _through(idle, stream, 65_536) == stream
    low = PayloadSplitter(STAND_IN)
    low.gather(len(BIG_TEXT) - 1)  # the text is left to websockets' max_size, the rest gathered
    out = _through(low, stream, 65_536)
    assert [data for _, data in _read(out[len(REQUEST) :])][1:2] == [BIG_TEXT]
    assert [bytes(p) for p in low.payloads] == [BIG_BINARY]


async def test_a_connection_hands_big_payloads_over_as_gathered_in_order():
    """Big one-frame messages come back as views of the gathered payload (websockets' join
    would copy them), in order with small, fragmented and binary messages; the protocol's
    reader is websockets' own."""
    sent: list[bytes | list[bytes]] = [b"a", BIG_TEXT, [b"frag", b"mented"], BIG_BINARY, b"z"]
    got: list[tuple[type, bytes]] = []
    done = asyncio.Event()

    async def handler(ws):
        ws.gather_big_payloads(1 << 30)
        await ws.send("gathering")  # from the next frame on, as the daemon after hello
        for _ in sent:
            raw = await ws.recv_payload()
            got.append((type(raw), bytes(raw)))
        reader = ws.protocol.reader
        assert not {"feed_data", "read_exact"} & set(vars(reader))
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
        (memoryview, BIG_TEXT),
        (bytes, b"fragmented"),
        (memoryview, BIG_BINARY),
        (bytes, b"z"),
    ]


# Every function and class attribute of websockets' modules, by identity, before and after
# the daemon's modules are imported, in a fresh interpreter.
_UNTOUCHED = """
import importlib, pkgutil, sys, websockets
mods = ["websockets." + m.name for m in pkgutil.walk_packages(websockets.__path__)]
mods = [importlib.import_module(m) for m in mods if "legacy" not in m and "sync" not in m
        and m not in ("websockets.__main__", "websockets.cli")]
def snap():
    out = {}
    for m in mods:
        for k, v in vars(m).items():
            out[(m.__name__, k)] = id(v)
            if isinstance(v, type) and v.__module__ == m.__name__:
                out.update({(m.__name__, k, a): id(w) for a, w in vars(v).items()})
    return out
before = snap()
import webshepherd.daemon.cli, webshepherd.daemon.cli.serve, webshepherd.daemon.server.server
import webshepherd.daemon.server.offload, webshepherd.daemon.server.payloads
after = snap()
changed = sorted(str(k) for k in before if after.get(k) != before[k])
assert len(before) > 500, len(before)
print(changed)
"""


def test_importing_the_daemon_leaves_websockets_untouched():
    out = subprocess.run(
        [sys.executable, "-c", _UNTOUCHED], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout
