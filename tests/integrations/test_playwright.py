"""The capture under the Playwright BrowserGym pins (1.44 in ``.venv-integrations``): the
Playwright helper (``webshepherd.integrations.playwright``) and ``webshepherd observe``.
Playwright 1.44 hands out the extension's service worker before its global scope is up (an
evaluation there once failed with ``setTimeout is not defined``); launches are repeated so that
a readiness wait that only works on a later Playwright fails here. ``bench/capture_launches.py``
runs 100 of them."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import requires, version

import pytest
from packaging.requirements import Requirement
from playwright.async_api import async_playwright
from playwright.sync_api import sync_playwright
from webshepherd.daemon.browser.chromium import CaptureError as ChromiumCaptureError
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.integrations.playwright import CaptureError, launch, page_observation
from webshepherd.protocol.errors import WebShepherdError

from tests.integrations.conftest import CHROMIUM, ROOT

LAUNCHES = 5


def test_this_venv_runs_the_playwright_browsergym_pins() -> None:
    pins = [Requirement(r) for r in requires("browsergym-core") or []]
    pin = next(r for r in pins if r.name == "playwright")
    assert str(pin.specifier).startswith("=="), pin  # a pin, not a range
    assert pin.specifier.contains(version("playwright")), (pin, version("playwright"))


def test_fresh_launches_capture_the_shop(shop: ShopServer) -> None:
    """Each launch is a new browser and a new service worker: the moment the wait must get
    right."""
    with sync_playwright() as pw:
        for _ in range(LAUNCHES):
            context = launch(pw, chromium=CHROMIUM)
            try:
                page = context.new_page()
                page.goto(shop.url, wait_until="load")
                observation = page_observation(page)
            finally:
                context.close()
            assert observation.url == shop.url
            assert observation.axtree.startswith("RootWebArea 'Volt & Wire")
            assert re.search(r"\[\w+\] searchbox", observation.axtree)


async def test_the_async_api_captures_the_shop(shop: ShopServer) -> None:
    async with async_playwright() as pw:
        context = await launch(pw, chromium=CHROMIUM)
        try:
            page = await context.new_page()
            await page.goto(shop.url, wait_until="load")
            observation = await page_observation(page)
        finally:
            await context.close()
    assert observation.axtree.startswith("RootWebArea 'Volt & Wire")


def test_a_refused_capture_is_a_capture_error_with_the_workers_message() -> None:
    assert CaptureError is ChromiumCaptureError and issubclass(CaptureError, WebShepherdError)
    with sync_playwright() as pw:
        context = launch(pw, chromium=CHROMIUM)
        try:
            page = context.new_page()
            page.goto("chrome://version/")
            with pytest.raises(CaptureError, match=r"chrome://version/ failed: .*chrome:// URL"):
                page_observation(page)
            page.goto("data:text/html,<p>after the refusal</p>")  # the helper still works
            assert "after the refusal" in page_observation(page).axtree
        finally:
            context.close()


def observe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "webshepherd.daemon.cli", "observe", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_observe_prints_the_shop_and_one_line_when_a_page_does_not_load(
    shop: ShopServer,
) -> None:
    for _ in range(2):
        done = observe(shop.url)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("RootWebArea 'Volt & Wire")
    failed = observe("http://127.0.0.1:9/")
    assert failed.returncode == 1
    assert failed.stdout == ""
    assert failed.stderr.strip().splitlines() == [
        "webshepherd: http://127.0.0.1:9/ did not load: Page.goto: net::ERR_UNSAFE_PORT "
        "at http://127.0.0.1:9/"
    ]
