"""The readiness wait and the capture's retries (``daemon/browser/chromium.py``), on a scripted
service worker that answers as Playwright 1.44's did: a scope not yet set up (its
``ReferenceError``), then the extension's. The real browser runs them in tests/e2e/ and
tests/integrations/test_playwright.py; these pin what each answer leads to."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from webshepherd.daemon.browser import chromium
from webshepherd.daemon.browser.chromium import (
    CAPTURE_EXACT,
    CAPTURE_PREFIX,
    READY_PROBE,
    CaptureError,
    capture,
    capture_steps,
    drive,
    ready_steps,
)
from webshepherd.protocol.errors import WebShepherdError

CAP = {"url": "http://shop/", "axtree": "RootWebArea 'Shop'", "warnings": [], "timing": {}}


class PlaywrightError(Exception):
    """What Playwright raises for a failed evaluation (its message: 'Worker.evaluate: ...')."""


class ScriptedWorker:
    """Answers each script's evaluations in turn: a value, or an exception to raise."""

    def __init__(self, **scripts: list[Any]) -> None:
        self.scripts: dict[str, Iterator[Any]] = {
            {"probe": READY_PROBE, "exact": CAPTURE_EXACT, "prefix": CAPTURE_PREFIX}[k]: iter(v)
            for k, v in scripts.items()
        }
        self.calls: list[str] = []

    def evaluate(self, script: str, arg: Any = None) -> Any:
        self.calls.append(
            {READY_PROBE: "probe", CAPTURE_EXACT: "exact", CAPTURE_PREFIX: "prefix"}[script]
        )
        answer = next(self.scripts[script])
        if isinstance(answer, Exception):
            raise answer
        return answer


NOT_UP = PlaywrightError("Worker.evaluate: ReferenceError: setTimeout is not defined")


def test_the_wait_polls_through_a_scope_not_yet_set_up() -> None:
    worker = ScriptedWorker(probe=[NOT_UP, False, NOT_UP, True])
    drive(ready_steps(worker))
    assert worker.calls == ["probe"] * 4


def test_a_worker_that_never_comes_up_is_a_capture_error_with_its_message() -> None:
    worker = ScriptedWorker(probe=[NOT_UP] * 1000)
    with pytest.raises(CaptureError, match=r"not ready after 0.2 s .*setTimeout is not defined"):
        drive(ready_steps(worker, timeout_s=0.2))


def test_a_closed_worker_fails_at_once() -> None:
    worker = ScriptedWorker(
        probe=[PlaywrightError("Target page, context or browser has been closed")]
    )
    with pytest.raises(CaptureError, match=r"service worker failed: Target page.*closed"):
        drive(ready_steps(worker))
    assert issubclass(CaptureError, WebShepherdError)


def test_a_capture_meeting_a_scope_not_set_up_is_tried_again() -> None:
    worker = ScriptedWorker(probe=[True, NOT_UP, True], exact=[NOT_UP, CAP])
    assert drive(capture_steps(worker, "http://shop/")) == CAP
    assert worker.calls == ["probe", "exact", "probe", "probe", "exact"]


def test_the_tries_are_bounded_and_the_error_says_so() -> None:
    tries = chromium.CAPTURE_TRIES
    worker = ScriptedWorker(probe=[True] * (tries + 1), exact=[NOT_UP] * tries)
    with pytest.raises(
        CaptureError, match=rf"http://shop/ failed: .*ReferenceError.*{tries} tries"
    ):
        drive(capture_steps(worker, "http://shop/"))


def test_the_workers_own_refusals_and_odd_answers_are_capture_errors() -> None:
    refusal = PlaywrightError("Worker.evaluate: Error: Cannot access a chrome:// URL")
    with pytest.raises(CaptureError, match=r"chrome://version/ failed: .*Cannot access"):
        drive(capture_steps(ScriptedWorker(probe=[True], exact=[refusal]), "chrome://version/"))
    with pytest.raises(CaptureError, match="2 tabs show http://shop/"):
        drive(capture_steps(ScriptedWorker(probe=[True], exact=[{"tabs": 2}]), "http://shop/"))
    with pytest.raises(CaptureError, match="returned NoneType, not a page"):
        drive(capture_steps(ScriptedWorker(probe=[True], exact=[None]), "http://shop/"))
    # no tab shows the exact URL: the first tab under it, as a prefix
    worker = ScriptedWorker(probe=[True], exact=[{"tabs": 0}], prefix=[CAP])
    assert drive(capture_steps(worker, "http://shop/")) == CAP


def test_the_async_helper_drives_the_same_steps() -> None:
    class AsyncWorker(ScriptedWorker):
        async def evaluate(self, script: str, arg: Any = None) -> Any:  # type: ignore[override]
            return super().evaluate(script, arg)

    worker = AsyncWorker(probe=[NOT_UP, True], prefix=[CAP])
    assert asyncio.run(capture(worker, "http://shop/")) == CAP
    assert worker.calls == ["probe", "probe", "prefix"]
