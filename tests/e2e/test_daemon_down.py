"""Daemon down: the badge says so, the page shows no errors, and the hook answers clearly."""

from __future__ import annotations

from tests.e2e.browser import GOLDEN, require_browser, serve_dir
from tests.e2e.conftest import wait_connected
from tests.e2e.test_golden_capture import hook
from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.ports import closed_port

require_browser()


async def test_daemon_down_badge_off_and_no_page_errors(browser):
    await browser.configure(f"ws://127.0.0.1:{closed_port()}/v1", TEST_TOKEN)
    await wait_connected(browser, "disconnected")
    assert await browser.worker.evaluate("() => chrome.action.getBadgeText({})") == "off"
    errors: list[str] = []
    with serve_dir(GOLDEN) as base:
        page = await browser.ctx.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on(
            "console",
            # the test server has no favicon: its 404 is not the extension's doing
            lambda m: (
                errors.append(m.text)
                if m.type == "error" and "Failed to load resource" not in m.text
                else None
            ),
        )
        await page.goto(f"{base}/p2-shop.html", wait_until="load")
        reply = await hook(page, "session.start", intent="anything")
    assert (reply["type"], reply["code"]) == ("error", "disconnected")
    assert errors == []
