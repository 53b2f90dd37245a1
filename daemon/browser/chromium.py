"""Chromium with the built extension loaded, through Playwright (a system Chromium binary,
no ``playwright install``), and the extension's capture. Used by ``webshepherd observe``,
``webshepherd.integrations.playwright``, the browser harness and the end-to-end tests.

The capture runs in the extension's service worker (``worker.evaluate``). Playwright may hand
out the worker before its global scope is set up: an evaluation then runs in a bare scope
(no ``setTimeout``, no ``chrome``; Playwright 1.44, which BrowserGym pins, does this in about
one launch in ten). So readiness is polled from Python with a probe that uses no timers and
throws nothing, an evaluation that meets such a scope is retried (a bounded number of times),
and every failure becomes a :class:`CaptureError` carrying the worker's message.

The steps (:data:`Steps`) are written once for Playwright's sync and async APIs: each yields
what a Playwright call returned (a value, or an awaitable under the async API) or a
:class:`Pause`, and is sent back the result; :func:`drive` and :func:`drive_async` run them.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from collections.abc import AsyncIterator, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, cast

from webshepherd.protocol.errors import WebShepherdError

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from playwright.async_api import BrowserContext
    from playwright.async_api import Worker as AsyncWorker
    from playwright.sync_api import Worker as SyncWorker

DEFAULT_DIST = Path(__file__).resolve().parents[2] / "extension" / "dist"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--silent-debugger-extension-api",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: True once the worker's global scope is up and the extension has set up ``self.webshepherd``;
#: no timers, and nothing that throws in a scope not yet set up (``typeof`` only).
READY_PROBE = (
    "() => typeof setTimeout === 'function' && typeof chrome === 'object' "
    "&& typeof self.webshepherd === 'object' && self.webshepherd !== null"
)
#: The extension's capture of the one tab showing exactly ``url`` (``{tabs: n}`` when n != 1).
CAPTURE_EXACT = """async ([url, flags]) => {
  const tabs = (await chrome.tabs.query({})).filter(t => t.url === url);
  return tabs.length === 1 ? self.webshepherd.captureTab(tabs[0].id, flags) : {tabs: tabs.length};
}"""
#: The extension's capture of the first tab whose URL starts with ``url``.
CAPTURE_PREFIX = "([url, flags]) => self.webshepherd.captureUrl(url, flags)"
#: How long the service worker may take to come up (a busy machine: seconds), and the poll.
READY_TIMEOUT_S = 20.0
READY_POLL_S = 0.05
#: Evaluations of the capture that met a scope not set up, before giving up.
CAPTURE_TRIES = 3
#: What Playwright reports for an evaluation in a worker scope not (or no longer) set up.
_SCOPE_NOT_UP = (
    "ReferenceError",
    "Execution context was destroyed",
    "Cannot find context with specified id",
)


class CaptureError(WebShepherdError):
    """The extension could not capture the page: the message says what happened, with the
    service worker's own message when it gave one."""


@dataclass(frozen=True)
class Pause:
    """A step's request to wait ``seconds`` (``time.sleep`` or ``asyncio.sleep``)."""

    seconds: float


R = TypeVar("R")

#: Steps that return R: each yield is a Playwright call (awaited under the async API, already
#: its result under the sync one) or a :class:`Pause`; what is sent back is the call's result.
Steps: TypeAlias = Generator[object, Any, R]


def find_chromium() -> str | None:
    """The system Chromium on PATH (Debian's ``chromium``, else ``chromium-browser``)."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def launch_args(dist: Path) -> list[str]:
    """Chromium's command-line flags, with only the extension in ``dist`` loaded."""
    return [*CHROMIUM_ARGS, f"--disable-extensions-except={dist}", f"--load-extension={dist}"]


def worker_message(exc: BaseException) -> str:
    """The first line of what Playwright (or the worker) said."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _scope_not_up(exc: BaseException) -> bool:
    message = worker_message(exc)
    return any(marker in message for marker in _SCOPE_NOT_UP)


# -- the steps -------------------------------------------------------------------------------


def ready_steps(
    worker: AsyncWorker | SyncWorker, timeout_s: float = READY_TIMEOUT_S
) -> Steps[None]:
    """Poll :data:`READY_PROBE` until the worker is up; ``CaptureError`` after ``timeout_s``
    or when the worker fails otherwise (closed, crashed)."""
    deadline = time.monotonic() + timeout_s
    last = "self.webshepherd is not set up"
    while True:
        try:
            if (yield worker.evaluate(READY_PROBE)) is True:
                return
        except Exception as exc:
            if not _scope_not_up(exc):
                raise CaptureError(
                    f"the extension's service worker failed: {worker_message(exc)}"
                ) from None
            last = worker_message(exc)
        if time.monotonic() >= deadline:
            raise CaptureError(
                f"the extension's service worker was not ready after {timeout_s:g} s ({last})"
            )
        yield Pause(READY_POLL_S)


def capture_steps(
    worker: AsyncWorker | SyncWorker, url: str, flags: str = "default", *, exact: bool = True
) -> Steps[dict[str, Any]]:
    """The extension's capture (a dict: ``url``, ``axtree``, ``warnings``, ``timing``) of the
    one tab showing ``url``, else (none does: a fragment, a redirect under way) of the first
    tab whose URL starts with it; ``exact=False``: the latter only. ``CaptureError`` says why
    there is none."""
    yield from ready_steps(worker)
    for attempt in range(1, CAPTURE_TRIES + 1):
        try:
            cap: object = {"tabs": 0}
            if exact:
                cap = yield worker.evaluate(CAPTURE_EXACT, [url, flags])
            if isinstance(cap, dict) and cap.get("tabs") == 0:
                cap = yield worker.evaluate(CAPTURE_PREFIX, [url, flags])
        except Exception as exc:
            if not _scope_not_up(exc) or attempt == CAPTURE_TRIES:
                raise CaptureError(
                    f"the capture of {url} failed: {worker_message(exc)}"
                    + (f" (after {attempt} tries)" if attempt > 1 else "")
                ) from None
            yield from ready_steps(worker)
            continue
        if not isinstance(cap, dict):
            raise CaptureError(f"the capture of {url} returned {type(cap).__name__}, not a page")
        if "axtree" not in cap:
            raise CaptureError(
                f"{cap.get('tabs')} tabs show {url}: the capture cannot tell them apart; "
                "close the others"
            )
        return cap
    raise AssertionError("unreachable")  # pragma: no cover


def drive(steps: Steps[R]) -> R:
    """Run steps with Playwright's sync API (each yield is already a result)."""
    try:
        result = next(steps)
        while True:
            if isinstance(result, Pause):
                time.sleep(result.seconds)
                result = None
            result = steps.send(result)
    except StopIteration as done:
        return done.value


async def drive_async(steps: Steps[R]) -> R:
    """Run steps with Playwright's async API (each yield is awaited; an error is thrown back
    into the step that made the call)."""
    try:
        pending = next(steps)
        while True:
            try:
                if isinstance(pending, Pause):
                    await asyncio.sleep(pending.seconds)
                    result = None
                else:
                    result = await cast("Awaitable[object]", pending)
            except Exception as exc:
                pending = steps.throw(exc)
            else:
                pending = steps.send(result)
    except StopIteration as done:
        return done.value


# -- the async helpers -----------------------------------------------------------------------


@contextlib.asynccontextmanager
async def extension_context(
    user_data_dir: str | Path, dist: Path, chromium: str, headless: bool = True
) -> AsyncIterator[tuple[BrowserContext, AsyncWorker]]:
    """A persistent context with the extension (headless unless told), and its service worker
    (``CaptureError`` when it does not start)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        ctx = await pw.chromium.launch_persistent_context(
            str(user_data_dir),
            executable_path=chromium,
            headless=headless,
            args=launch_args(dist),
            viewport={"width": 1280, "height": 720},
        )
        try:
            worker = ctx.service_workers[0] if ctx.service_workers else None
            if worker is None:
                try:
                    worker = await ctx.wait_for_event("serviceworker", timeout=15_000)
                except Exception as exc:
                    raise CaptureError(
                        f"the extension in {dist} started no service worker: {worker_message(exc)}"
                    ) from None
            yield ctx, worker
        finally:
            await ctx.close()


async def wait_extension_ready(worker: AsyncWorker, timeout_s: float = READY_TIMEOUT_S) -> None:
    """Wait until the service worker is up and has set up ``self.webshepherd``."""
    await drive_async(ready_steps(worker, timeout_s))


async def capture(
    worker: AsyncWorker, url_prefix: str, flags: str = "default", *, exact: bool = False
) -> dict[str, Any]:
    """The extension's capture of the first tab whose URL starts with ``url_prefix``
    (``exact``: of the one tab showing exactly that URL first; :func:`capture_steps`)."""
    return await drive_async(capture_steps(worker, url_prefix, flags, exact=exact))
