"""The harness with the extension's overlay on the page: an element under the panel is still
clicked by bid (the panel lets the action through), and the panel works again afterwards."""

from __future__ import annotations

from webshepherd.daemon.browser.playwright_env import PlaywrightEnvironment
from webshepherd.daemon.demo.browser_page import hook

from tests.e2e.browser import hook_key, require_browser, serve_dir

require_browser()

PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Under</title></head>
<body><h1>Under the panel</h1>
<button id="under" type="button" style="position: fixed; top: 60px; right: 60px"
  onclick="this.textContent = 'clicked'">Hidden by the panel</button>
</body></html>"""


async def test_a_click_reaches_the_element_under_the_panel(paired, tmp_path):
    daemon, browser = paired
    (tmp_path / "under.html").write_text(PAGE, encoding="utf-8")
    with serve_dir(tmp_path) as base:
        page = await browser.ctx.new_page()
        await page.goto(f"{base}/under.html", wait_until="load")
        started = await hook(
            page,
            "session.start",
            intent="Press the button",
            checklist="- x",
            key=await hook_key(daemon),
        )
        assert started["type"] == "session.started"
        panel = page.get_by_test_id("ws-panel")
        await panel.wait_for()
        # the panel really covers the button: a plain click would hit the panel
        box = await page.locator("#under").bounding_box()
        assert box is not None
        hit = await page.evaluate(
            "([x, y]) => document.elementFromPoint(x, y).tagName",
            [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
        )
        assert hit == "WEBSHEPHERD-OVERLAY"
        env = PlaywrightEnvironment(page, browser.worker)
        await env.observe()
        bid = await page.locator("#under").get_attribute("bid")
        await env.execute(f"click('{bid}')")
        assert await page.locator("#under").inner_text() == "clicked"
        # the panel takes clicks again (a person can still use it)
        pointer = await page.evaluate(
            "() => getComputedStyle(document.querySelector('webshepherd-overlay')).pointerEvents"
        )
        assert pointer == "auto"
