"""What the hostile suite checks after every attack: the daemon answered cleanly, logged no
traceback, and still serves."""

from __future__ import annotations

import asyncio
import logging

import pytest
from websockets.exceptions import ConnectionClosed

from tests.fixtures.daemon import DaemonHandle


async def close_code(ws, timeout: float = 10) -> int | None:
    """The close code the daemon sent (reading and dropping frames until then)."""
    with pytest.raises(ConnectionClosed) as info:
        while True:
            await asyncio.wait_for(ws.recv(), timeout)
    return info.value.rcvd.code if info.value.rcvd else None


async def still_serving(daemon: DaemonHandle) -> None:
    c = await daemon.client()
    assert (await c.request({"type": "ping"}))["type"] == "pong"


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    """No record at ERROR or above and none carrying an exception (a traceback in the log)."""
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not bad, [f"{r.name}: {r.getMessage()}" for r in bad]


def burst(ws, frames: list[str]) -> None:
    """Write many frames in one go, as a client pipelining over a fast link."""
    for f in frames:
        ws.protocol.send_text(f.encode())
    ws.send_data()


async def replies(c, ids: list[str], timeout: float = 60) -> dict[str, dict]:
    """The replies to ``ids`` (other frames are dropped)."""
    got: dict[str, dict] = {}
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while len(got) < len(ids):
        m = await c.recv(max(0.01, end - loop.time()))
        if m.get("id") in ids:
            got[m["id"]] = m
    return got
