"""A paused request whose decider is gone is refused, never left hanging and never released
(issue 49): the paired extension's service worker stopped while a POST waited for the person,
the tab's session ended, the pairing removed. A loopback recording server counts what arrives."""

from __future__ import annotations

import asyncio

from tests.e2e.browser import require_browser
from tests.e2e.test_extension_commit_hold import POST_ORDER, posts, shop, start_session
from tests.e2e.test_golden_capture import hook
from tests.fixtures.poll import until

require_browser()

__all__ = ["shop"]  # the recording server's fixture

COMMIT_CARD = "[data-testid=ws-decide][data-reason=commit]"


def extension_conns(daemon) -> dict[int, object]:
    return {i: c for i, c in daemon.server.hub.conns.items() if c.declared == "extension"}


async def stop_worker(browser, daemon) -> None:
    """Stops the extension's service worker as Chrome stops an idle one (DevTools protocol)
    and waits until its connection to the daemon has closed."""
    before = set(extension_conns(daemon))
    ext_id = browser.worker.url.split("/")[2]
    page = await browser.ctx.new_page()
    await page.goto(f"chrome-extension://{ext_id}/options.html")
    cdp = await browser.ctx.new_cdp_session(page)
    await cdp.send("ServiceWorker.enable")
    await cdp.send("ServiceWorker.stopAllWorkers")
    await until(
        lambda: not before & set(extension_conns(daemon)), what="the worker's connection to close"
    )
    await page.close()


async def barrier(page, base: str) -> None:
    """A request after which anything the browser had let go has arrived (same server)."""
    assert await page.evaluate("(u) => fetch(u).then(r => r.status)", f"{base}/after.json") == 200


async def test_a_post_paused_when_the_worker_stops_is_refused_and_stays_refused(paired, shop):
    daemon, browser = paired
    base, seen = shop
    page, key, sid = await start_session(daemon, browser, base)
    await page.evaluate(POST_ORDER, "sku=3")
    panel = await browser.open_panel()
    card = panel.locator(COMMIT_CARD)
    await card.wait_for(timeout=30_000)
    assert posts(seen) == []

    await stop_worker(browser, daemon)
    # the next event starts the worker again (the page asks its hook); it finds the POST its
    # last incarnation left paused, whose decider is gone, and fails it
    status = await hook(page, "status", key=key)
    assert status["session_id"] == sid
    result = await asyncio.wait_for(page.evaluate("() => window.__order"), 30)
    assert str(result).startswith("failed"), result
    decided = panel.locator("[data-testid=ws-decided][data-status=rejected]")
    await decided.first.wait_for(timeout=30_000)
    text = await decided.first.inner_text()
    assert f"POST {base}/orders" in text and "service worker stopped" in text, text

    # the person's Reject, then the session's end (whose Fetch.disable let it go before)
    if await card.count() > 0:
        await card.get_by_role("button", name="Reject").click()
    ended = await hook(page, "session.end", outcome="failure", key=key)
    assert ended["type"] == "session.ended", ended
    await barrier(page, base)
    assert posts(seen) == []
    # the tab holds nothing now: a POST goes unasked (the Python gate's job there)
    await page.evaluate(POST_ORDER, "sku=4")
    assert await page.evaluate("() => window.__order") == 200
    assert posts(seen) == [("/orders", b"sku=4")]


async def test_a_post_waiting_when_the_session_ends_is_refused_not_released(paired, shop):
    daemon, browser = paired
    base, seen = shop
    page, key, _sid = await start_session(daemon, browser, base)
    await page.evaluate(POST_ORDER, "sku=5")
    panel = await browser.open_panel()
    await panel.locator(COMMIT_CARD).wait_for(timeout=30_000)
    ended = await hook(page, "session.end", outcome="failure", key=key)
    assert ended["type"] == "session.ended", ended
    result = await asyncio.wait_for(page.evaluate("() => window.__order"), 30)
    assert str(result).startswith("failed"), result
    await barrier(page, base)
    assert posts(seen) == []
    decided = panel.locator("[data-testid=ws-decided][data-status=rejected]")
    await decided.first.wait_for(timeout=30_000)
    assert "stopped following the session" in await decided.first.inner_text()
