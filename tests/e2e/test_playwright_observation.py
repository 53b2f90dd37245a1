"""webshepherd.integrations.playwright on the golden pages: a page the user loads with Playwright
(sync or async API) becomes an observation whose text is BrowserGym's, as the extension sends it."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
from playwright.async_api import async_playwright
from playwright.sync_api import sync_playwright
from webshepherd.integrations.playwright import CaptureError, launch, page_observation
from webshepherd.protocol import Observation

from tests.e2e.browser import (
    CHROMIUM,
    GOLDEN,
    GOLDEN_PORT,
    require_browser,
    serve_dir,
    without_inline_text_boxes,
)

require_browser()


@pytest.fixture(scope="module")
def golden_site():
    with serve_dir(GOLDEN, GOLDEN_PORT) as base:
        yield base


def golden(name: str, flags: str) -> str:
    return without_inline_text_boxes((GOLDEN / f"{name}.{flags}.txt").read_text("utf-8"))


def test_sync_page_gives_the_golden_text_and_a_screenshot(golden_site, tmp_path: Path) -> None:
    with sync_playwright() as pw:
        context = launch(pw, chromium=CHROMIUM, user_data_dir=tmp_path / "profile")
        page = context.new_page()
        for name in ("p4-iframe", "p1-form"):
            page.goto(f"{golden_site}/{name}.html", wait_until="load")
            for flags in ("default", "visible"):
                obs = page_observation(page, flags=flags)
                assert isinstance(obs, Observation)
                assert obs.url == f"{golden_site}/{name}.html"
                assert obs.axtree == golden(name, flags), f"{name} ({flags})"
                assert obs.screenshot is None
        shot = page_observation(page, screenshot=True).screenshot
        assert shot is not None and shot.data is not None
        assert base64.b64decode(shot.data).startswith(b"\x89PNG")
        # what the page says of each target comes with it (the daemon's guards read it): the
        # form's submit button (GET: the form names no method), its text fields (Enter submits)
        obs = page_observation(page)
        assert obs.elements is not None
        submit = re.search(r"\[(\w+)\] button 'Submit application'", obs.axtree)
        assert submit is not None
        facts = obs.elements[submit.group(1)]
        assert (facts.tag, facts.submits, facts.form_method) == ("button", True, "GET")
        assert facts.form_action == f"{golden_site}/p1-form.html#"  # action="#", resolved
        assert all(f.submits for f in obs.elements.values())  # no link on this page
        for bid in obs.elements:
            assert page.locator(f'[bid="{bid}"]').count() == 1
        # the capture leaves the bids in the page: a BrowserGym action's target is a selector
        bid = re.search(r"\[(\w+)\] textbox", page_observation(page).axtree)
        assert bid is not None
        assert page.locator(f'[bid="{bid.group(1)}"]').count() == 1
        context.close()


async def test_async_page_gives_the_golden_text(golden_site) -> None:
    async with async_playwright() as pw:
        context = await launch(pw, chromium=CHROMIUM)  # a temporary profile
        page = await context.new_page()
        for name in ("p2-shop", "p3-quotes"):
            await page.goto(f"{golden_site}/{name}.html", wait_until="load")
            obs = await page_observation(page)
            assert obs.axtree == golden(name, "default"), name
            assert obs.elements  # links, with their absolute targets
            hrefs = {f.href for f in obs.elements.values() if f.href}
            assert f"{golden_site}/{name}.html#cart" in hrefs or name != "p2-shop", hrefs
        await context.close()


async def test_a_page_without_the_extension_says_how_to_get_one(golden_site) -> None:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = await browser.new_page()
        await page.goto(f"{golden_site}/p1-form.html")
        with pytest.raises(CaptureError, match=r"no webshepherd extension.*launch"):
            await page_observation(page)
        await browser.close()


def test_bad_flags_and_a_missing_build_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="flags"):
        page_observation(object(), flags="all")
    with pytest.raises(CaptureError, match="make extension"):
        launch(object(), extension=tmp_path)
