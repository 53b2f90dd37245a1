"""The overlay's reward badges sit beside their targets, never over the page's text: links
stacked in a list, each followed by its price, buttons side by side, a link inside a sentence,
a link at the viewport's right edge (its badge flips to the left), and the demo shop's results
page (where a badge once covered the price after a link). Plumbing: a scripted judge, so every
candidate has a reward whatever a model would write."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from webshepherd.daemon.build import build_daemon
from webshepherd.daemon.demo.agent import TASK
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.variants import variant
from webshepherd.daemon.extension_id import EXTENSION_ID

from tests.e2e.browser import Browser, hook_key, require_browser, serve_dir
from tests.e2e.conftest import wait_connected
from tests.e2e.test_golden_capture import hook
from tests.fixtures.daemon import TEST_TOKEN, DaemonHandle, make_settings
from tests.fixtures.scripted_judge import ScriptedJudge

require_browser()

CHECKLIST = "Checklist 1: Find a cable\nChecklist 2: Add it to the cart"
TARGETS = [
    r"link 'Volt & Wire'",
    r"link 'Deals'",
    r"link 'BlueLink USB-C to USB-C cable, 2 m'",
    r"link 'Basic USB-C cable, 1 m'",
    r"link 'ProCharge USB-C cable, 1.5 m'",
    r"button 'Add to cart'",
    r"button 'Compare'",
    r"button 'Save'",
    r"link 'the terms'",
    r"link 'Help'",
]

# every target's text boxes (one per line box), in the page's viewport coordinates
TEXT_BOXES = """(bids) => Object.fromEntries(bids.map((bid) => {
  const el = document.querySelector(`[bid="${bid}"]`);
  const range = document.createRange();
  range.selectNodeContents(el);
  const rects = Array.from(range.getClientRects()).filter((r) => r.width > 0 && r.height > 0);
  return [bid, rects.map((r) => ({x: r.left, y: r.top, width: r.width, height: r.height}))];
}))"""


# every text node's boxes on the page (one per line box), in the viewport's coordinates
PAGE_TEXT = """() => {
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.nodeValue.trim()) continue;
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      if (r.width > 0 && r.height > 0) {
        const text = node.nodeValue.trim();
        out.push({text, x: r.left, y: r.top, width: r.width, height: r.height});
      }
    }
  }
  return out;
}"""


@pytest.fixture(scope="module")
def pages_site():
    with serve_dir(Path(__file__).resolve().parent / "demo_pages") as base:
        yield base


@pytest_asyncio.fixture(loop_scope="function")
async def scripted(tmp_path: Path, browser: Browser) -> AsyncIterator[tuple[DaemonHandle, Browser]]:
    """A daemon judging every candidate 0.6 (one item done, one in progress), paired with the
    browser."""
    settings = make_settings(tmp_path, allowed_extension_ids=(EXTENSION_ID,))
    server = build_daemon(settings, ScriptedJudge(default=(0.6, (2, 1), "fine")))
    await server.start()
    handle = DaemonHandle(server, settings.daemon)
    try:
        await browser.configure(handle.url, TEST_TOKEN)
        await wait_connected(browser)
        yield handle, browser
    finally:
        await handle.close_clients()
        await server.stop()


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def gap(a: dict[str, float], b: dict[str, float]) -> float:
    """The distance between two boxes (0 when they touch or overlap)."""
    dx = max(b["x"] - (a["x"] + a["width"]), a["x"] - (b["x"] + b["width"]), 0)
    dy = max(b["y"] - (a["y"] + a["height"]), a["y"] - (b["y"] + b["height"]), 0)
    return max(dx, dy)


async def test_badges_sit_beside_their_targets(scripted, pages_site):
    daemon, browser = scripted
    page = await browser.ctx.new_page()
    await page.set_viewport_size({"width": 1000, "height": 700})
    await page.goto(f"{pages_site}/badges.html", wait_until="load")
    key = await hook_key(daemon)
    started = await hook(page, "session.start", intent="Buy a cable", checklist=CHECKLIST, key=key)
    assert started["type"] == "session.started", started
    axtree = (await browser.capture(f"{pages_site}/badges.html"))["axtree"]
    bids = []
    for target in TARGETS:
        found = re.search(rf"\[(\w+)\] {target}", axtree)
        assert found, (target, axtree)
        bids.append(found.group(1))
    cands = [{"thought": "Try it.", "action": f"click('{bid}')"} for bid in bids]
    scored = await hook(page, "score", candidates=cands, samples=1, approval="never", key=key)
    assert scored["type"] == "scored", scored

    badges = page.get_by_test_id("ws-badge")
    await badges.nth(len(bids) - 1).wait_for()
    assert await badges.count() == len(bids)
    texts = await page.evaluate(TEXT_BOXES, bids)
    assert all(texts[bid] for bid in bids), texts
    elements = {bid: await page.locator(f"[bid='{bid}']").bounding_box() for bid in bids}
    page_text = await page.evaluate(PAGE_TEXT)
    assert any(t["text"] == "— $8.49" for t in page_text), page_text
    for bid in bids:
        badge = page.locator(f"[data-testid=ws-badge][data-bid='{bid}']")
        assert await badge.inner_text() in ("0.60", "0.60 ★")
        box = await badge.bounding_box()
        assert box, bid
        # over no target's text, its own or a neighbour's, nor any other text on the page ...
        for other in bids:
            for text in texts[other]:
                assert not overlaps(box, text), (bid, other, box, text)
        for text in page_text:
            assert not overlaps(box, text), (bid, box, text)
        # ... and beside its own target (just outside its outline)
        assert not overlaps(box, elements[bid]), (bid, box, elements[bid])
        assert gap(box, elements[bid]) <= 8, (bid, box, elements[bid])
    # the link at the viewport's right edge has its badge on its left
    help_badge = await page.locator(f"[data-testid=ws-badge][data-bid='{bids[-1]}']").bounding_box()
    assert help_badge["x"] + help_badge["width"] <= elements[bids[-1]]["x"]


async def test_badges_leave_the_demo_shops_prices_free(scripted):
    """The demo shop's results page as the browser demo shows it: every result link scored,
    no badge over a price (or any other text)."""
    daemon, browser = scripted
    with ShopServer(variant=variant(0)) as shop:
        url = f"{shop.url.rstrip('/')}/search?q=usb-c+cable"
        page = await browser.ctx.new_page()
        await page.set_viewport_size({"width": 1280, "height": 720})
        await page.goto(url, wait_until="load")
        key = await hook_key(daemon)
        started = await hook(page, "session.start", intent=TASK, checklist=CHECKLIST, key=key)
        assert started["type"] == "session.started", started
        axtree = (await browser.capture(url))["axtree"]
        bids = re.findall(r"\[(\w+)\] link '[^']*cable[^']*'", axtree)
        assert len(bids) == 3, axtree
        cands = [{"thought": "Try it.", "action": f"click('{bid}')"} for bid in bids]
        scored = await hook(page, "score", candidates=cands, samples=1, approval="never", key=key)
        assert scored["type"] == "scored", scored
        badges = page.get_by_test_id("ws-badge")
        await badges.nth(len(bids) - 1).wait_for()
        page_text = await page.evaluate(PAGE_TEXT)
        prices = [t for t in page_text if t["text"].startswith("— $")]
        assert len(prices) == 3, page_text
        for bid in bids:
            box = await page.locator(f"[data-testid=ws-badge][data-bid='{bid}']").bounding_box()
            assert box, bid
            for text in page_text:
                assert not overlaps(box, text), (bid, box, text)
