"""Reaping tasks: ``reap`` waits for tasks to end however they end, and raises only a
cancellation of the caller's own, at once, even when it is already cleaning up after one."""

from __future__ import annotations

import asyncio
import logging

import pytest
from webshepherd.protocol.tasks import reap


async def _forever() -> None:
    await asyncio.Event().wait()


async def test_reap_waits_for_a_cancelled_task_and_an_errored_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def fails() -> None:
        raise RuntimeError("boom")

    task = asyncio.create_task(_forever())
    broken = asyncio.create_task(fails())
    await asyncio.sleep(0)
    task.cancel()
    with caplog.at_level(logging.DEBUG, logger="webshepherd.protocol.tasks"):
        await reap(task, None, broken)  # their own ends: nothing raised
    assert task.cancelled() and isinstance(broken.exception(), RuntimeError)
    (logged,) = [r for r in caplog.records if r.exc_info]
    assert "ended with an error" in logged.getMessage()


async def test_a_cancelled_caller_is_not_swallowed_even_by_a_task_slow_to_end() -> None:
    """Ctrl-C (or a timeout) while the caller waits: the caller stops at once, though the task
    it waits for takes its time (``suppress(CancelledError)`` around ``await task`` waited for
    it, then swallowed the caller's cancellation)."""
    release = asyncio.Event()

    async def slow_to_end() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await release.wait()  # cleaning up after its cancellation

    inner = asyncio.create_task(slow_to_end())
    await asyncio.sleep(0)
    inner.cancel()
    reaper = asyncio.create_task(reap(inner))
    await asyncio.sleep(0)
    reaper.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reaper
    assert reaper.cancelled() and not inner.done()
    release.set()
    await reap(inner)
    assert inner.cancelled()


async def test_a_caller_cleaning_up_after_its_own_cancellation_still_reaps() -> None:
    """A ``finally`` that runs because its task was cancelled reaps what it cancelled, and the
    task's cancellation goes on after it (a check of ``cancelling()`` alone raised at once)."""
    cleaned: list[bool] = []
    inner = asyncio.create_task(_forever())

    async def owner() -> None:
        try:
            await _forever()
        finally:
            inner.cancel()
            await reap(inner)
            cleaned.append(inner.cancelled())

    task = asyncio.create_task(owner())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == [True]
