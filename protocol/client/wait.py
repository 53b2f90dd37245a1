"""Waiting for a daemon that is starting: a client started right after ``webshepherd serve &``
connects once the daemon is up instead of failing at once.

Only "not up yet" is waited for: no token file yet (the daemon writes it when it starts) or
nothing listening at the address. A refused token or any other error is raised at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from webshepherd.protocol.errors import ConnectionLostError, UnauthorizedError, WebShepherdError

log = logging.getLogger("webshepherd.client")

#: How long a connecting client waits for the daemon to come up, in seconds (a tiny-judge
#: `serve` listens after 5 s on 2 busy cores, after about 20 s on 2 very busy ones).
DAEMON_WAIT_S = 30.0
#: The SDK's words when the token file does not exist yet (protocol/client/async_client.py).
NO_TOKEN_YET = "no pairing token found"


def not_up_yet(exc: BaseException) -> bool:
    """Whether ``exc`` says the daemon is not up yet (rather than that it refused)."""
    if isinstance(exc, ConnectionLostError):
        return exc.retryable
    return isinstance(exc, UnauthorizedError) and exc.message.startswith(NO_TOKEN_YET)


async def until_daemon(
    open_: Callable[[], Awaitable[None]],
    url: str,
    wait_s: float = DAEMON_WAIT_S,
    *,
    poll_s: float = 0.25,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Run ``open_`` until it succeeds; while the daemon at ``url`` is not up yet, try again
    every ``poll_s`` for up to ``wait_s`` seconds, logging once that it waits; then raise the
    last error (it says how to start the daemon)."""
    deadline = clock() + wait_s
    said = False
    while True:
        try:
            await open_()
            return
        except WebShepherdError as exc:
            if not not_up_yet(exc) or clock() + poll_s > deadline:
                raise
            if not said:
                log.warning("waiting for the daemon at %s (up to %g s) …", url, wait_s)
                said = True
        await asyncio.sleep(poll_s)
