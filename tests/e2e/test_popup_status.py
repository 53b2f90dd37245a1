"""The popup's words for the two links, in real Chromium with a real daemon: the token's
(no token, token refused, connected) and the person's (not paired, paired as NAME); and the
daemon's URL wraps at sensible points, `127.0.0.1:PORT` on one line at the popup's width.
WEBSHEPHERD_POPUP_SHOTS=<dir> saves a PNG of the status lines there."""

from __future__ import annotations

import os
import re
from pathlib import Path

from webshepherd.daemon.extension_id import EXTENSION_ID

from tests.e2e.browser import require_browser
from tests.e2e.conftest import wait_connected
from tests.e2e.test_extension_commit_hold import POST_ORDER, shop, start_session
from tests.fixtures.daemon import TEST_TOKEN

require_browser()

__all__ = ["shop"]  # the recording server's fixture, used here

SHOTS = os.environ.get("WEBSHEPHERD_POPUP_SHOTS")

# the lines host:port's characters take, and the lines the element's whole text takes
HOST_LINES = """([el, host]) => {
    const lines = (r) => new Set([...r.getClientRects()].map((b) => Math.round(b.top))).size;
    const all = document.createRange();
    all.selectNodeContents(el);
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const at = n.data.indexOf(host);
        if (at < 0) continue;
        const r = document.createRange();
        r.setStart(n, at);
        r.setEnd(n, at + host.length);
        return [lines(r), lines(all)];
    }
    return [0, lines(all)];
}"""


async def test_popup_says_connected_no_token_refused_paired(start_daemon, browser):
    daemon = await start_daemon(allowed_extension_ids=(EXTENSION_ID,))
    ext_id = browser.worker.url.split("/")[2]
    popup = await browser.ctx.new_page()
    await popup.set_viewport_size({"width": 300, "height": 600})
    await popup.goto(f"chrome-extension://{ext_id}/popup.html", wait_until="load")
    state, person = popup.get_by_test_id("ws-connection"), popup.get_by_test_id("ws-person")

    # no token: said so, and nothing about pairing
    await state.get_by_text("No token: run webshepherd token").wait_for(timeout=30_000)
    assert await state.locator("code").first.inner_text() == "webshepherd token"  # no backticks
    assert await person.inner_text() == ""
    assert "paired" not in (await popup.locator("body").inner_text()).lower()

    # a wrong token: refused by the daemon (the popup follows without a reload)
    await browser.configure(daemon.url, "not-the-token", page_hook=False)
    await wait_connected(browser, "unauthorized")
    await state.get_by_text(f"Token refused by the daemon at {daemon.url}").wait_for(timeout=30_000)
    assert "paired" not in (await popup.locator("body").inner_text()).lower()

    # the right one: connected, no person paired
    await browser.configure(daemon.url, TEST_TOKEN, page_hook=False)
    await wait_connected(browser)
    await state.get_by_text(f"Connected to the daemon at {daemon.url}.").wait_for(timeout=30_000)
    await person.get_by_text("Not paired: this browser decides no approvals").wait_for()
    body = await popup.locator("body").inner_text()
    assert body.lower().count("not paired") == 1 and "`" not in body, body  # said once, as code

    # paired as a person
    await browser.pair_as_person(daemon.config.config_dir)
    await person.get_by_text(re.compile(r"^Paired as extension:\S+")).wait_for(timeout=30_000)
    assert (await state.inner_text()).startswith("Connected to the daemon")

    # the URL wraps after ws:// when it must, never inside 127.0.0.1:PORT (wrapped here: the
    # refused-token sentence is long)
    await browser.configure(daemon.url, "not-the-token", page_hook=False)
    await wait_connected(browser, "unauthorized")
    await state.get_by_text("Token refused").wait_for(timeout=30_000)
    host = daemon.url.removeprefix("ws://").split("/")[0]
    assert re.fullmatch(r"127\.0\.0\.1:\d+", host)
    handle = await state.element_handle()
    lines, total = await popup.evaluate(HOST_LINES, [handle, host])
    assert lines == 1, f"{host} spans {lines} lines"
    assert total >= 2  # the sentence did wrap
    assert await popup.evaluate("() => document.body.getBoundingClientRect().width") <= 282
    png = await state.screenshot(path=str(Path(SHOTS) / "popup-status.png") if SHOTS else None)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    await popup.close()


async def test_a_paused_requests_url_keeps_its_port_on_one_line_in_the_popup(paired, shop):
    """The card's URL row is narrow (beside its labels): it wraps after `//` and `/`, never
    inside 127.0.0.1:PORT."""
    daemon, browser = paired
    base, _seen = shop
    page, _key, _sid = await start_session(daemon, browser, base)
    await page.evaluate(POST_ORDER, "sku=7")
    ext_id = browser.worker.url.split("/")[2]
    popup = await browser.ctx.new_page()
    await popup.set_viewport_size({"width": 300, "height": 900})
    await popup.goto(f"chrome-extension://{ext_id}/popup.html", wait_until="load")
    card = popup.locator("[data-testid=ws-decide][data-reason=commit]")
    await card.wait_for(timeout=30_000)
    host = base.removeprefix("http://")
    for testid, shown in [
        ("ws-request-url", f"{base}/orders"),
        ("ws-request-origin", base),
        ("ws-request-page", f"{base}/shop.html"),
    ]:
        row = card.get_by_test_id(testid)
        assert await row.inner_text() == shown
        lines, total = await popup.evaluate(HOST_LINES, [await row.element_handle(), host])
        assert total >= 2, f"{testid}: {shown} fits on one line here: nothing was tested"
        assert lines == 1, f"{testid}: {host} spans {lines} lines"
    if SHOTS:
        await card.screenshot(path=str(Path(SHOTS) / "popup-request-card.png"))
    await card.get_by_role("button", name="Reject").click()
    await popup.close()
