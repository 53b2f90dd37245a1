"""Untrusted text in the real extension, in real Chromium: an agent's held action carrying
every class of invisible character (bidi overrides, zero-width, tags, variation selectors, …)
reads as escapes in the overlay's card and the side panel's card, never reordered or hidden,
and a goto's non-ASCII host reads as punycode (extension/src/display-text.ts)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from webshepherd.protocol.terminal_text import ESCAPED_RANGES, terminal_safe

from tests.e2e.browser import GOLDEN, hook_key, require_browser, serve_dir
from tests.e2e.test_golden_capture import hook

require_browser()

# one character (or two) of each class, inside what an agent types
CLASSES = {
    "bidi control": "\u202e91\u202c \u2066x\u2069\u200f\u061c",
    "zero-width": "1\u200b3 \u2060\ufeff\u200d",
    "tag": "\U000e0049\U000e0067\U000e007f",
    "variation selector": "ok\ufe0f \U000e0100",
    "soft hyphen": "Pay\u00adPal",
    "combining grapheme joiner": "a\u034fb",
    "Hangul filler": "\u3164\u115f",
    "Mongolian vowel separator": "\u180e",
    "interlinear annotation": "\ufff9x\ufffb",
    "C0 control": "\x1b[2J\x07",
    "C1 control": "\x9b\x85",
    "line separator": "\u2028",
}
TYPED = " ".join(CLASSES.values())
FILL = f"fill('14', '{TYPED}')"
GOTO = "goto('https://pаypal.com/login')"  # a Cyrillic а
INTENT = "Buy\u200b a desk lamp \u202egnp.exe"
CHECKLIST = "Checklist 1: Search for a\u00ad product\u202e\nChecklist 2: Add it to the cart"
ESCAPED = {c for lo, hi, _ in ESCAPED_RANGES for c in range(lo, hi + 1)}


def hidden_in(text: str) -> list[str]:
    """The escaped-class characters ``text`` still carries (newlines aside)."""
    return [f"U+{ord(c):04X}" for c in text if ord(c) in ESCAPED and c != "\n"]


@pytest.fixture(scope="module")
def site():
    with serve_dir(GOLDEN) as base:
        yield base


async def hold(daemon, browser, site, action: str):
    """A tab whose session holds ``action`` for a person; returns (page, pending score)."""
    page = await browser.ctx.new_page()
    await page.goto(f"{site}/p2-shop.html", wait_until="load")
    key = await hook_key(daemon)
    started = await hook(page, "session.start", intent=INTENT, checklist=CHECKLIST, key=key)
    assert started["type"] == "session.started", started
    cands = [{"thought": "Type it\u200b.", "action": action}]
    pending = asyncio.ensure_future(
        hook(page, "score", candidates=cands, samples=1, approval="always", key=key)
    )
    card = asyncio.ensure_future(page.get_by_test_id("ws-approval").wait_for(timeout=60_000))
    await asyncio.wait([card, pending], return_when=asyncio.FIRST_COMPLETED)
    assert not pending.done(), f"not held: {pending.result()}"
    await card
    return page, pending


async def test_every_class_shows_as_an_escape_in_the_overlay_and_the_side_panel(paired, site):
    daemon, browser = paired  # a person's browser: a guarded goto waits for it
    fill_page, fill_pending = await hold(daemon, browser, site, FILL)
    goto_page, goto_pending = await hold(daemon, browser, site, GOTO)
    try:
        # the overlay in the page: its card's action, the title's intent, the checklist
        card = fill_page.get_by_test_id("ws-approval")
        assert await card.locator("code").inner_text() == terminal_safe(FILL)
        assert "fill('14', '\\u202e91\\u202c " in terminal_safe(FILL)  # not 'fill('14', '19'
        overlay = await fill_page.get_by_test_id("ws-panel").text_content()
        assert hidden_in(overlay) == [], overlay
        assert terminal_safe(INTENT) in overlay
        assert "Search for a\\xad product\\u202e" in overlay
        goto_card = goto_page.get_by_test_id("ws-approval")
        assert await goto_card.locator("code").inner_text() == (
            "goto('https://xn--pypal-4ve.com/login')"
        )
        # the side panel, where a person decides: both cards
        panel = await browser.open_panel()
        decide = panel.get_by_test_id("ws-decide")
        await decide.nth(1).wait_for(timeout=30_000)
        shown = await panel.locator("body").inner_text()
        assert hidden_in(shown) == [], shown
        codes = await decide.locator("code").all_inner_texts()
        assert sorted(codes) == sorted([terminal_safe(FILL), terminal_safe(GOTO)])
        for cls, raw in CLASSES.items():
            assert terminal_safe(raw) in shown, f"{cls}: {terminal_safe(raw)!r} not shown"
        assert terminal_safe(INTENT) in shown
        assert "pаypal" not in shown and "https://xn--pypal-4ve.com/login" in shown
        # the card's rows (issue 35 item 3): what the fill types, where the goto leads
        typed = await panel.get_by_test_id("ws-card-typed").inner_text()
        assert typed == f"\u201c{terminal_safe(TYPED)}\u201d"
        leads = await panel.get_by_test_id("ws-card-destination").inner_text()
        assert leads == "https://xn--pypal-4ve.com/login"
        await panel.screenshot(path="/tmp/untrusted-display-panel.png", full_page=True)
    finally:
        for pending in (fill_pending, goto_pending):
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
