"""The Playwright harness in real Chromium with the extension: every action kind by bid (in the
page and in a same-origin iframe), navigation waits, and the errors for actions that cannot run."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from webshepherd.daemon.browser.playwright_env import PlaywrightEnvironment, frame_bids
from webshepherd.protocol.agents.environment import ActionError, Environment

from tests.e2e.browser import Browser, open_browser, require_browser, serve_dir

require_browser()
pytestmark = pytest.mark.asyncio(loop_scope="module")

INDEX = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Harness</title></head>
<body>
<h1>Harness page</h1>
<input id="name" aria-label="Name">
<textarea id="notes" aria-label="Notes"></textarea>
<button id="btn" type="button"
  onclick="out.textContent = 'click ' + event.detail">Press me</button>
<button id="ctx" type="button"
  oncontextmenu="event.preventDefault(); out.textContent = 'right'">Right me</button>
<p id="out">idle</p>
<span id="hov" onmouseover="this.textContent = 'hovered'">hover target</span>
<select id="colour" aria-label="Colour">
  <option value="r">Red</option><option value="b">Blue</option></select>
<select id="sizes" multiple aria-label="Sizes">
  <option>S</option><option>M</option><option>L</option></select>
<label><input id="agree" type="checkbox"> Agree</label>
<button id="off" type="button" disabled>Disabled</button>
<button id="gone" type="button" style="display: none">Hidden</button>
<div style="position: relative"><button id="covered" type="button">Covered</button>
  <div style="position: absolute; inset: 0; background: white">cover</div></div>
<form action="/next.html" method="get"><input id="q" name="q" aria-label="Query"></form>
<a id="next" href="/next.html">Next page</a>
<iframe id="frame" title="Widget" srcdoc="<button type=button id=inner
  onclick=&quot;this.textContent = 'inner clicked'&quot;>Inner</button>"></iframe>
<div style="height: 3000px">tall</div>
</body></html>"""
NEXT = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Next</title></head>
<body><h1>Next</h1><a href="/index.html">Back home</a></body></html>"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("site")
    (root / "index.html").write_text(INDEX, encoding="utf-8")
    (root / "next.html").write_text(NEXT, encoding="utf-8")
    with serve_dir(root) as base:
        yield base


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chromium(tmp_path_factory) -> AsyncIterator[Browser]:
    async with open_browser(Path(tmp_path_factory.mktemp("profile"))) as b:
        yield b


@pytest_asyncio.fixture(loop_scope="module")
async def env(chromium: Browser, site: str) -> AsyncIterator[PlaywrightEnvironment]:
    page = await chromium.ctx.new_page()
    await page.goto(f"{site}/index.html", wait_until="load")
    environment = PlaywrightEnvironment(page, chromium.worker)
    await environment.observe()  # marks the bids
    yield environment
    await page.close()


async def bid(env: PlaywrightEnvironment, selector: str) -> str:
    value = await env.page.locator(selector).get_attribute("bid")
    assert value, selector
    return value


async def test_observe_is_the_extensions_capture_with_a_screenshot(env, site):
    assert isinstance(env, Environment)
    state = await env.observe()
    assert state.url == f"{site}/index.html"
    assert f"[{await bid(env, '#btn')}] button 'Press me'" in state.axtree
    assert f"[{await bid(env, '#name')}] textbox 'Name'" in state.axtree
    assert state.screenshot is not None and state.screenshot.startswith(b"\x89PNG\r\n\x1a\n")
    assert state.last_action_error is None


async def test_element_actions_by_bid(env):
    page, out = env.page, env.page.locator("#out")
    await env.execute(f"fill('{await bid(env, '#name')}', 'Ada Lovelace')")
    assert await page.locator("#name").input_value() == "Ada Lovelace"
    await env.execute(f"clear('{await bid(env, '#name')}')")
    assert await page.locator("#name").input_value() == ""
    await env.execute(f"fill('{await bid(env, '#notes')}', 'two\\nlines')")
    assert await page.locator("#notes").input_value() == "two\nlines"
    await env.execute(f"click('{await bid(env, '#btn')}')")
    assert await out.inner_text() == "click 1"
    await env.execute(f"dblclick('{await bid(env, '#btn')}')")
    assert await out.inner_text() == "click 2"
    await env.execute(f"click('{await bid(env, '#ctx')}', button='right')")
    assert await out.inner_text() == "right"
    await env.execute(f"hover('{await bid(env, '#hov')}')")
    assert await page.locator("#hov").inner_text() == "hovered"
    await env.execute(f"select_option('{await bid(env, '#colour')}', 'Blue')")
    assert await page.locator("#colour").input_value() == "b"
    await env.execute(f"select_option('{await bid(env, '#sizes')}', ['S', 'L'])")
    chosen = await page.eval_on_selector(
        "#sizes", "s => Array.from(s.selectedOptions, o => o.value)"
    )
    assert chosen == ["S", "L"]
    await env.execute(f"check('{await bid(env, '#agree')}')")
    assert await page.locator("#agree").is_checked()
    await env.execute(f"uncheck('{await bid(env, '#agree')}')")
    assert not await page.locator("#agree").is_checked()
    await env.execute(f"focus('{await bid(env, '#name')}')")
    await env.execute("keyboard_type('abc')")
    await env.execute("keyboard_press('Backspace')")
    assert await page.locator("#name").input_value() == "ab"
    state = await env.observe()  # the next observation sees the typed value
    name_bid = await bid(env, "#name")
    line = next(x for x in state.axtree.split("\n") if x.strip().startswith(f"[{name_bid}] "))
    assert line.strip().startswith(f"[{name_bid}] textbox 'Name'") and "value='ab'" in line


async def test_the_same_origin_iframe_is_reached_through_its_bid_prefix(env):
    inner = env.page.frame_locator("#frame").locator("#inner")
    inner_bid = await inner.get_attribute("bid")
    frame_bid = await bid(env, "#frame")
    assert inner_bid and inner_bid.startswith(frame_bid) and inner_bid != frame_bid
    assert frame_bids(inner_bid) == [frame_bid]
    await env.execute(f"click('{inner_bid}')")
    assert await inner.inner_text() == "inner clicked"


async def test_scroll_moves_the_page(env):
    assert await env.page.evaluate("() => scrollY") == 0
    await env.execute("scroll(0, 400)")
    await env.page.wait_for_function("() => scrollY > 0")


async def test_navigation_waits_for_the_new_page(env, site):
    page = env.page
    await env.execute(f"click('{await bid(env, '#next')}')")
    assert page.url == f"{site}/next.html"
    assert await page.evaluate("() => document.readyState") == "complete"
    await env.execute("go_back()")
    assert page.url == f"{site}/index.html"
    await env.execute("go_forward()")
    assert page.url == f"{site}/next.html"
    await env.execute(f"goto('{site}/index.html')")
    assert page.url == f"{site}/index.html"
    await env.observe()
    await env.execute(f"fill('{await bid(env, '#q')}', 'usb c')")
    await env.execute(f"press('{await bid(env, '#q')}', 'Enter')")  # submits the form
    assert page.url == f"{site}/next.html?q=usb+c"
    await env.observe()
    assert await page.locator("h1").inner_text() == "Next"


async def test_messages_and_infeasibility_end_the_episode(env):
    sent = await env.execute("send_msg_to_user('The order is VW-1001')")
    assert (sent.message, sent.infeasible, sent.done) == ("The order is VW-1001", None, True)
    given_up = await env.execute("report_infeasible('the shop sells no such cable')")
    assert (given_up.infeasible, given_up.done) == ("the shop sells no such cable", True)
    assert not (await env.execute("noop(10)")).done


async def test_actions_that_cannot_run_raise_clear_errors(env, site):
    async def error(action: str) -> str:
        with pytest.raises(ActionError) as info:
            await env.execute(action)
        return info.value.message

    button, colour = await bid(env, "#btn"), await bid(env, "#colour")
    assert "no element with bid '9999' on the page" in await error("click('9999')")
    assert "no iframe with bid 'z'" in await error("click('z3')")
    assert "'1; x' is not a bid" in await error("click('1; x')")
    hidden = await error(f"click('{await bid(env, '#gone')}')")
    assert "is not visible" in hidden
    assert f"cannot fill a <button type=button> (bid '{button}')" in await error(
        f"fill('{button}', 'x')"
    )
    missing = await error(f"select_option('{colour}', 'Green')")
    assert "option 'Green' not found" in missing and "'Red', 'Blue'" in missing
    assert "not a <select>" in await error(f"select_option('{button}', 'Red')")
    assert "is disabled" in await error(f"click('{await bid(env, '#off')}')")
    assert "did not take the action within 3000 ms (covered by another element" in await error(
        f"click('{await bid(env, '#covered')}')"
    )
    assert "not a checkbox or radio" in await error(f"check('{button}')")
    assert "unknown action 'tap'" in await error("tap('1')")
    assert "navigation to 'http://127.0.0.1:9/' failed" in await error(
        "goto('http://127.0.0.1:9/')"
    )
    # the last error is reported once, with the next observation
    await env.page.goto(f"{site}/index.html", wait_until="load")
    state = await env.observe()
    assert state.last_action_error and "navigation to 'http://127.0.0.1:9/'" in (
        state.last_action_error
    )
    assert (await env.observe()).last_action_error is None


async def test_go_back_without_history(chromium):
    page = await chromium.ctx.new_page()
    env = PlaywrightEnvironment(page, chromium.worker)
    with pytest.raises(ActionError, match="no previous page"):
        await env.execute("go_back()")
    await page.close()


async def test_two_tabs_on_one_url_are_refused_not_confused(chromium, env):
    twin = await chromium.ctx.new_page()
    await twin.goto(env.page.url, wait_until="load")
    with pytest.raises(ActionError, match=r"2 tabs show .*close the others"):
        await env.observe()
    await twin.close()
    assert "button 'Press me'" in (await env.observe()).axtree
