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
