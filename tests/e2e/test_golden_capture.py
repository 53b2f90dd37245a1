"""The golden pages loaded live: the extension's capture equals BrowserGym's text, and the daemon
receives exactly that (InlineTextBox lines left out)."""

from __future__ import annotations

import sqlite3

import pytest

from tests.e2e.browser import (
    GOLDEN,
    GOLDEN_PORT,
    hook_key,
    require_browser,
    serve_dir,
    without_inline_text_boxes,
)

require_browser()

PAGES = ["p1-form", "p2-shop", "p3-quotes", "p4-iframe"]


@pytest.fixture(scope="module")
def golden_site():
    with serve_dir(GOLDEN, GOLDEN_PORT) as base:
        yield base


async def test_live_capture_equals_browsergym_on_every_golden_page(browser, golden_site):
    page = await browser.ctx.new_page()
    for name in PAGES:
        url = f"{golden_site}/{name}.html"
        await page.goto(url, wait_until="load")
        for flags in ("default", "visible"):
            got = await browser.capture(url, flags)
            want = without_inline_text_boxes((GOLDEN / f"{name}.{flags}.txt").read_text("utf-8"))
            assert got["axtree"] == want, f"{name} ({flags})"
            assert got["warnings"] == []


async def test_bids_are_stable_across_steps_and_new_elements_get_new_ones(browser, golden_site):
    page = await browser.ctx.new_page()
    url = f"{golden_site}/p2-shop.html"
    await page.goto(url, wait_until="load")
    first = (await browser.capture(url))["axtree"]
    assert (await browser.capture(url))["axtree"] == first
    await page.evaluate(
        "() => { const b = document.createElement('button'); b.textContent = 'Late button';"
        " document.body.prepend(b); }"
    )
    third = (await browser.capture(url))["axtree"]
    lines = [line for line in third.split("\n") if "Late button" not in line]
    assert "\n".join(lines) == first  # every old bid kept
    assert any("button 'Late button'" in line for line in third.split("\n"))
    # the page's own ARIA attributes are restored after the capture
    assert (
        await page.evaluate("() => document.querySelectorAll('[aria-roledescription]').length") == 0
    )


async def test_daemon_receives_exactly_the_golden_text(paired, golden_site):
    daemon, browser = paired
    monitor = await daemon.client(role="monitor", name="watch")
    assert (await monitor.request({"type": "subscribe", "sessions": "*"}))["type"] == "subscribed"
    page = await browser.ctx.new_page()
    await page.goto(f"{golden_site}/p4-iframe.html", wait_until="load")
    started = await hook(
        page,
        "session.start",
        intent="Track the parcel",
        checklist="Checklist 1: Read the status",
        key=await hook_key(daemon),
    )
    assert started["type"] == "session.started", started
    sid = started["session_id"]
    event = await monitor.wait_for(
        lambda m: m.get("type") == "session.started" and m.get("session_id") == sid
    )
    assert event["session_id"] == sid
    # the start observation (sent inline in session.start), as the daemon recorded it
    want = without_inline_text_boxes((GOLDEN / "p4-iframe.default.txt").read_text("utf-8"))
    assert _recorded_axtrees(daemon, sid)[0] == want
    # navigation inside the session: the extension sends `observe` on load by itself
    await page.goto(f"{golden_site}/p1-form.html", wait_until="load")
    observed = await monitor.wait_for(
        lambda m: m.get("type") == "observed" and m.get("url", "").endswith("/p1-form.html"),
        timeout=30,
    )
    assert observed["axtree"] == without_inline_text_boxes(
        (GOLDEN / "p1-form.default.txt").read_text("utf-8")
    )
    assert observed["url"] == f"http://127.0.0.1:{GOLDEN_PORT}/p1-form.html"
    assert observed["screenshot"]["mime"] == "image/png"


def _recorded_axtrees(daemon, sid: str) -> list[str]:
    con = sqlite3.connect(daemon.config.db_path)
    try:
        rows = con.execute(
            "SELECT axtree FROM observations WHERE session_id = ? ORDER BY step", (sid,)
        ).fetchall()
    finally:
        con.close()
    return [r[0] for r in rows]


async def hook(page, type_: str, timeout_ms: int = 120_000, **body):
    """Send one page-hook request with window.postMessage and wait for its reply."""
    return await page.evaluate(
        """([type, body, timeout]) => new Promise((resolve, reject) => {
            const id = 'h' + Math.random().toString(36).slice(2);
            const timer = setTimeout(() => reject(new Error('no reply to ' + type)), timeout);
            window.addEventListener('message', function on(ev) {
              const d = ev.data;
              if (d && d.channel === 'webshepherd' && d.dir === 'reply' && d.id === id) {
                window.removeEventListener('message', on); clearTimeout(timer); resolve(d);
              }
            });
            window.postMessage({channel: 'webshepherd', dir: 'request', id, type, ...body}, '*');
        })""",
        [type_, body, timeout_ms],
    )
