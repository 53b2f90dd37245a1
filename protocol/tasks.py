"""Reaping tasks: waiting for a task the caller cancelled (a reader, a writer, a loop) to end,
without ever swallowing a cancellation of the caller's own.

``with contextlib.suppress(asyncio.CancelledError): await task`` cannot tell the task's
cancellation from the caller's: cancelling the caller while it waits there cancels ``task``
too, and the caller's CancelledError is swallowed, so a Ctrl-C or a timeout around the
caller is lost. :func:`reap` waits with :func:`asyncio.wait`, which raises only the caller's
own cancellation; the daemon's server, the TUI and the client SDK use it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger(__name__)


def _retrieve(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.debug("task %s ended with an error", task.get_name(), exc_info=exc)


async def reap(*tasks: asyncio.Task[Any] | None) -> None:
    """Wait until ``tasks`` (None: skipped) have ended, however they end (cancelled, or an
    error: logged at debug). Only a cancellation of the caller itself raises, then at once
    (the tasks go on ending by themselves)."""
    waiting = [t for t in tasks if t is not None]
    for t in waiting:
        t.add_done_callback(_retrieve)
    if waiting:
        await asyncio.wait(waiting)
