"""Hostile pages against the extension and a real daemon (issue 23, findings 1-3): a page's
own script cannot decide an approval or get the overlay into the observation; another
origin the agent navigates to can neither read nor drive the session; a page in a browser
whose launcher did not turn the hook on cannot start a session."""

from __future__ import annotations

import asyncio
import io
import sqlite3

import pytest
from PIL import Image

from tests.e2e.browser import GOLDEN, hook_key, require_browser, serve_dir
from tests.e2e.conftest import wait_connected
from tests.e2e.test_extension_commit_hold import set_mode
from tests.e2e.test_golden_capture import hook
from tests.fixtures.daemon import TEST_TOKEN

require_browser()

CHECKLIST = "Checklist 1: Search for a product\nChecklist 2: Add it to the cart"

#: What a page's own script does to the approval card it finds in the overlay: click every
#: button, put its own action in every field and press Enter, type the shortcut keys, post a
#: decision on the hook's channel.
ATTACK_CARD = """() => {
  const root = document.querySelector('webshepherd-overlay')?.shadowRoot;
  const card = root?.querySelector('[data-testid=ws-approval]');
  if (!card) return 'no card';
  let touched = 0;
  for (const b of root.querySelectorAll('button')) { b.click(); touched++; }
  for (const input of root.querySelectorAll('input, textarea')) {
    input.hidden = false;
    input.value = "click('666')";
    input.dispatchEvent(new Event('input', {bubbles: true}));
    input.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));
    touched++;
  }
  for (const key of ['a', 'e', 'Enter']) {
    card.dispatchEvent(new KeyboardEvent('keydown', {key, bubbles: true, composed: true}));
  }
  // and through the page hook's channel, as a decision request
  postMessage({channel: 'webshepherd', dir: 'request', id: 'd1', type: 'approval.decide',
               request_id: card.dataset.requestId, decision: 'approve'}, '*');
  return 'attacked';
}"""

#: A page-hook request that resolves with the reply, or null when none comes in ``timeout``.
MAYBE_HOOK = """([type, body, timeout]) => new Promise((resolve) => {
  const id = 'x' + Math.random().toString(36).slice(2);
  const timer = setTimeout(() => { removeEventListener('message', on); resolve(null); }, timeout);
  function on(ev) {
    const d = ev.data;
    if (d && d.channel === 'webshepherd' && d.dir === 'reply' && d.id === id) {
      removeEventListener('message', on); clearTimeout(timer); resolve(d);
    }
  }
  addEventListener('message', on);
  postMessage({channel: 'webshepherd', dir: 'request', id, type, ...body}, '*');
})"""

#: Everything the page hears on its window from the start (the hook's `ready` included).
LISTEN = """window.__heard = [];
addEventListener('message', (ev) => {
  if (ev.data && ev.data.channel === 'webshepherd') window.__heard.push(ev.data);
});"""


@pytest.fixture(scope="module")
def site():
    with serve_dir(GOLDEN) as base:
        yield base


async def start(daemon, page, url):
    await page.goto(url, wait_until="load")
    key = await hook_key(daemon)
    started = await hook(
        page, "session.start", intent="Buy a desk lamp", checklist=CHECKLIST, key=key
    )
    assert started["type"] == "session.started", started
    return started["session_id"], key


async def events(monitor, sid):
    return (await monitor.request({"type": "session.get", "session_id": sid}))["events"]


async def test_a_page_script_decides_nothing(paired, site):
    daemon, browser = paired
    monitor = await daemon.client(role="monitor", name="watch")
    page = await browser.ctx.new_page()
    url = f"{site}/p2-shop.html"
    sid, key = await start(daemon, page, url)
    pending = asyncio.ensure_future(
        hook(
            page,
            "score",
            candidates=[{"thought": "Search.", "action": "fill('14', 'lamp')"}],
            samples=1,
            approval="always",
            key=key,
        )
    )
    card = page.get_by_test_id("ws-approval")
    await card.wait_for(timeout=60_000)
    request_id = await card.get_attribute("data-request-id")

    # trusted input (what an agent driving the page can do), then the page's own script
    await card.click()
    await page.keyboard.press("a")
    await page.keyboard.press("Enter")
    assert await page.evaluate(ATTACK_CARD) == "attacked"
    # and the overlay is never in the observation, even with a decoy host before it
    await page.evaluate(
        "() => { const d = document.createElement('div');"
        " d.setAttribute('data-webshepherd-overlay', ''); document.body.prepend(d); }"
    )
    capture = await browser.capture(url)
    assert "Waiting for a person" not in capture["axtree"]
    assert "side panel" not in capture["axtree"]
    # a fixed interval, proving an absence: time for a decision to reach the daemon, were one sent
    await asyncio.sleep(2)

    assert not pending.done()
    assert [e for e in await events(monitor, sid) if e["type"] == "approval.resolved"] == []
    assert await card.count() == 1  # still asking

    # a person decides in the side panel
    panel = await browser.open_panel()
    decide = panel.locator(f"[data-testid=ws-decide][data-request-id='{request_id}']")
    await decide.get_by_role("button", name="Reject").click()
    scored = await asyncio.wait_for(pending, 60)
    assert (scored["decision"]["status"], scored["decision"]["by"]) == (
        "rejected",
        "extension:webshepherd-extension/panel",
    )


async def test_another_origin_neither_reads_nor_drives_the_session(paired, site):
    daemon, browser = paired
    monitor = await daemon.client(role="monitor", name="watch")
    page = await browser.ctx.new_page()
    sid, key = await start(daemon, page, f"{site}/p2-shop.html")
    await page.get_by_test_id("ws-panel").wait_for()

    other = site.replace("127.0.0.1", "localhost")  # the same pages on another origin
    # leaving for another origin is a commit the browser holds: the person lets it run (watch)
    await set_mode(browser, sid, "watch")
    await page.goto(f"{other}/p2-shop.html", wait_until="load")
    status = await page.evaluate(MAYBE_HOOK, ["status", {}, 10_000])
    assert status["type"] == "status" and status["session_id"] is None, status
    for type_, body in [
        ("action", {"action": "click('666')"}),
        ("session.end", {"outcome": "success", "answer": "pwned"}),
        ("observe", {}),
        ("attach", {"session_id": sid}),
    ]:
        for key_guess in (None, "A" * 43):
            sent = {**body, **({"key": key_guess} if key_guess else {})}
            reply = await page.evaluate(MAYBE_HOOK, [type_, sent, 10_000])
            assert reply["type"] == "error", (type_, reply)
            assert reply["code"] in ("unauthorized", "no_session"), (type_, reply)
    await asyncio.sleep(1)  # a fixed interval, proving an absence: no overlay is drawn
    assert await page.evaluate("() => document.querySelector('webshepherd-overlay')") is None
    got = await monitor.request({"type": "session.get", "session_id": sid})
    assert got["session"]["state"] != "ended"
    assert [e for e in got["events"] if e["type"] == "action"] == []

    # the agent itself may follow its session here, with its key
    attached = await hook(page, "attach", key=key)
    assert (attached["type"], attached["session_id"]) == ("attached", sid), attached
    await page.get_by_test_id("ws-panel").wait_for()


async def test_no_session_without_the_launchers_opt_in(start_daemon, browser, site):
    from webshepherd.daemon.extension_id import EXTENSION_ID

    daemon = await start_daemon(allowed_extension_ids=(EXTENSION_ID,))
    await browser.configure(daemon.url, TEST_TOKEN, page_hook=False)
    await wait_connected(browser)
    await browser.ctx.add_init_script(LISTEN)
    page = await browser.ctx.new_page()
    await page.goto(f"{site}/p2-shop.html", wait_until="load")
    key = await hook_key(daemon)  # even with a real key: the hook is off
    for type_, body in [
        ("status", {}),
        ("session.start", {"intent": "Buy a desk lamp", "checklist": CHECKLIST, "key": key}),
        ("session.start", {"intent": "Buy a desk lamp", "checklist": CHECKLIST}),
    ]:
        assert await page.evaluate(MAYBE_HOOK, [type_, body, 3000]) is None, type_
    heard = await page.evaluate("() => window.__heard.filter(d => d.dir === 'reply')")
    assert heard == []  # not even `ready`: the page cannot tell the extension is there
    monitor = await daemon.client(role="monitor", name="watch")
    assert (await monitor.request({"type": "sessions.list"}))["sessions"] == []

    # turned on, a page still needs a key the daemon gave the agent
    await browser.configure(daemon.url, TEST_TOKEN, page_hook=True)
    await page.reload(wait_until="load")
    refused = await page.evaluate(
        MAYBE_HOOK, ["session.start", {"intent": "Buy a desk lamp", "checklist": CHECKLIST}, 10_000]
    )
    assert (refused["type"], refused["code"]) == ("error", "unauthorized"), refused
    made_up = await page.evaluate(
        MAYBE_HOOK,
        ["session.start", {"intent": "Buy", "checklist": CHECKLIST, "key": "B" * 43}, 10_000],
    )
    assert (made_up["type"], made_up["code"]) == ("error", "unauthorized"), made_up
    assert (await monitor.request({"type": "sessions.list"}))["sessions"] == []


WHITE_PAGE = """<!doctype html><html><head><title>Plain</title>
<style>html, body { background: #fff; margin: 0; }</style></head>
<body><p>Nothing under the panel</p><button type="button">Go</button></body></html>"""


async def test_the_overlay_is_in_no_observation(paired, tmp_path):
    """Not in the screenshot the extension sends, and not in the accessibility tree any
    capture reads (an agent's own, e.g. BrowserGym's over CDP, included)."""
    daemon, browser = paired
    (tmp_path / "plain.html").write_text(WHITE_PAGE, encoding="utf-8")
    with serve_dir(tmp_path) as base:
        page = await browser.ctx.new_page()
        sid, key = await start(daemon, page, f"{base}/plain.html")
        panel = page.get_by_test_id("ws-panel")
        await panel.wait_for()
        box = await panel.bounding_box()
        assert box and box["width"] > 100
        assert (await hook(page, "observe", key=key))["type"] == "observed"
        cdp = await browser.ctx.new_cdp_session(page)
        nodes = (await cdp.send("Accessibility.getFullAXTree"))["nodes"]
        await cdp.detach()
    shown = [
        n["name"]["value"]
        for n in nodes
        if not n.get("ignored") and "webshepherd" in str(n.get("name", {}).get("value", ""))
    ]
    assert shown == []
    con = sqlite3.connect(daemon.config.db_path)
    try:
        (png,) = con.execute(
            "SELECT screenshot FROM observations WHERE session_id = ? AND screenshot IS NOT NULL"
            " ORDER BY id DESC LIMIT 1",
            (sid,),
        ).fetchone()
    finally:
        con.close()
    shot = Image.open(io.BytesIO(png)).convert("L")
    left, top = int(box["x"]) + 2, int(box["y"]) + 2
    region = shot.crop((left, top, left + int(box["width"]) - 4, top + int(box["height"]) - 4))
    assert region.getextrema() == (255, 255), "the overlay's panel is in the screenshot"
