"""Waiting for a daemon that is starting: a client started right after ``webshepherd serve &``
connects once the daemon is up instead of failing at once.

``serve`` writes a starting marker (:func:`starting_marker`: its pid and address, in the config
dir beside the token) before it loads its model and removes it when it stops. A client waits
only while a live ``serve`` has marked the address it connects to as starting, and only for
"not up yet": no token file yet, or nothing listening. With no daemon starting, or for a
refused token or any other error, it fails at once with the error that says what to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

from webshepherd.protocol.errors import ConnectionLostError, UnauthorizedError, WebShepherdError
from webshepherd.protocol.private import write_private

log = logging.getLogger("webshepherd.client")

#: The longest a connecting client waits for a starting daemon, in seconds (a tiny-judge
#: `serve` listens after 5 s on 2 busy cores, after about 20 s on 2 very busy ones; a big model
#: takes longer). It stops waiting at once when the starting ``serve`` exits.
DAEMON_WAIT_S = 180.0
#: How long a client that finds no daemon looks for a ``serve`` marking its address as starting
#: before it gives up: a ``serve`` started a moment before it (``serve … &`` on the line above)
#: marks the address within a second or two of starting.
STARTUP_GRACE_S = 3.0
#: The SDK's words when the token file does not exist yet (protocol/client/async_client.py).
NO_TOKEN_YET = "no pairing token found"


def _marker_path(url: str, config_dir: Path | None) -> Path | None:
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "wss" else 80)
    except ValueError:
        return None
    from webshepherd.protocol.token_store import default_config_dir

    return (config_dir or default_config_dir()) / f"serve-{port}.starting"


@contextlib.contextmanager
def starting_marker(url: str, config_dir: Path | None = None) -> Iterator[None]:
    """Mark the daemon at ``url`` as starting for as long as the block runs (``serve``, from
    before its model loads until it stops), so clients started meanwhile wait for it."""
    path = _marker_path(url, config_dir)
    if path is None:
        yield
        return
    try:
        write_private(path, json.dumps({"pid": os.getpid(), "url": url}))  # in the config dir
    except OSError:  # a read-only config dir: clients then fail at once, as before
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            if json.loads(path.read_text("utf-8")).get("pid") == os.getpid():
                path.unlink()


def daemon_starting(url: str, config_dir: Path | None = None) -> bool:
    """Whether a live ``serve`` process has marked ``url``'s port as starting."""
    path = _marker_path(url, config_dir)
    if path is None:
        return False
    try:
        pid = int(json.loads(path.read_text("utf-8"))["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True  # alive, another user's
    except (OSError, ValueError):
        return False
    return True


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
    starting: Callable[[str], bool] = daemon_starting,
    grace_s: float = STARTUP_GRACE_S,
) -> None:
    """Run ``open_`` until it succeeds; while the daemon at ``url`` is not up yet and a
    ``serve`` is starting there (``starting``; for the first ``grace_s`` seconds, one may still
    be about to say so), try again every ``poll_s`` for up to ``wait_s`` seconds, logging once
    that it waits for a starting one; then raise the last error (it says how to start the
    daemon)."""
    begun = clock()
    deadline = begun + wait_s
    said = False
    while True:
        try:
            await open_()
            return
        except WebShepherdError as exc:
            marked = starting(url) or clock() - begun < min(grace_s, wait_s)
            if not not_up_yet(exc) or not marked or clock() + poll_s > deadline:
                raise
            if not said and starting(url):
                log.warning("waiting for the daemon at %s (up to %g s) …", url, wait_s)
                said = True
        await asyncio.sleep(poll_s)
