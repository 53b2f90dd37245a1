"""The connection under AsyncClient (its socket, reader, calls and reconnecting are tested
through AsyncClient in test_async_client.py and test_wait.py over a real daemon): here, that
closing it never swallows the caller's own cancellation."""

from __future__ import annotations

import asyncio

import pytest
from webshepherd.protocol.client.connection import reap


async def test_reap_waits_for_a_cancelled_task_and_an_errored_one() -> None:
    async def forever() -> None:
        await asyncio.Event().wait()

    async def fails() -> None:
        raise RuntimeError("boom")

    task = asyncio.create_task(forever())
    await asyncio.sleep(0)
    task.cancel()
    await reap(task)  # its own cancellation: done, nothing raised
    assert task.cancelled()
    broken = asyncio.create_task(fails())
    await reap(broken)
    assert isinstance(broken.exception(), RuntimeError)


async def test_a_cancelled_caller_is_not_swallowed_by_reap() -> None:
    """Ctrl-C (or a timeout) while a client closes: the closing task still stops."""
    inner = asyncio.create_task(asyncio.Event().wait())
    reaper = asyncio.create_task(reap(inner))
    await asyncio.sleep(0)
    reaper.cancel()  # the caller is cancelled while it waits; inner is cancelled with it
    with pytest.raises(asyncio.CancelledError):
        await reaper
    assert reaper.cancelled()
