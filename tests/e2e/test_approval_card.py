"""The approval card in real Chromium with the built extension: a step held through the page
hook (the extension captures the page, its screenshot and boxes) shows in the side panel and
the popup what a person needs to judge it: the target (role, name, bid), why it waits, the
thought and parsed feedback, the other candidates with rewards, every untrusted string
escaped, and the target cut out of the screenshot on a canvas. The overlay's feedback box shows
the held candidate's parsed feedback, never the judge's <answer> block.

WEBSHEPHERD_CARD_SHOTS=<dir> saves PNGs of the side panel's card there (for the closing note).
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
from pathlib import Path

import pytest

from tests.e2e.browser import hook_key, require_browser, serve_dir
from tests.e2e.test_golden_capture import hook

require_browser()

CHECKLIST = "Checklist 1: Search for a lamp\nChecklist 2: Add it to the cart"
SHOTS = os.environ.get("WEBSHEPHERD_CARD_SHOTS")


@pytest.fixture(scope="module")
def pages_site():
    with serve_dir(Path(__file__).resolve().parent / "demo_pages") as base:
        yield base


async def held_request(daemon, browser, pages_site, cands):
    """Start a session on the lamp page through the hook, score ``cands`` with approval
    ``always``; the held request as an approver receives it, and the page."""
    page = await browser.ctx.new_page()
    await page.set_viewport_size({"width": 800, "height": 500})
    await page.goto(f"{pages_site}/lamp.html", wait_until="load")
    key = await hook_key(daemon)
    started = await hook(
        page, "session.start", intent="Buy a desk lamp", checklist=CHECKLIST, key=key
    )
    assert started["type"] == "session.started", started
    watcher = await daemon.client(role="monitor", name="watcher")
    sub = await watcher.request({"type": "subscribe", "sessions": [started["session_id"]]})
    assert sub["type"] == "subscribed", sub
    pending = asyncio.ensure_future(
        hook(page, "score", candidates=cands, samples=1, approval="always", key=key)
    )
    req = await watcher.wait_for("approval.request", timeout=90)
    return page, pending, req


async def bids_of(browser, pages_site) -> tuple[str, str]:
    capture = await browser.capture(f"{pages_site}/lamp.html")
    search = re.search(r"\[(\w+)\] searchbox 'Search'", capture["axtree"]).group(1)
    add = re.search(r"\[(\w+)\] button 'Add to cart'", capture["axtree"]).group(1)
    return search, add


async def test_the_side_panel_card_for_a_click(paired, pages_site):
    daemon, browser = paired
    warm = await browser.ctx.new_page()  # the capture's bids for the lamp page
    await warm.goto(f"{pages_site}/lamp.html", wait_until="load")
    search, add = await bids_of(browser, pages_site)
    await warm.close()
    cands = [
        {"thought": "Add the lamp \u202eevil\u202c to the cart.", "action": f"click('{add}')"},
        {"thought": "Search again.", "action": f"fill('{search}', 'desk\u200blamp')"},
    ]
    page, pending, req = await held_request(daemon, browser, pages_site, cands)
    card = req["card"]
    held = req["candidate_index"]
    assert card is not None and card["target"]["bid"] in (add, search)
    other = 1 - held

    panel = await browser.open_panel()
    decide = panel.locator(f"[data-testid=ws-decide][data-request-id='{req['request_id']}']")
    await decide.wait_for(timeout=30_000)
    target = await decide.get_by_test_id("ws-card-target").inner_text()
    if held == 0:
        assert target == f"button “Add to cart” [{add}]"
    else:
        assert target == f"searchbox “Search” [{search}]"
        assert await decide.get_by_test_id("ws-card-typed").inner_text() == "“desk\\u200blamp”"
    assert await decide.get_by_test_id("ws-card-why").inner_text() == (
        "the agent asks a person at every step"
    )
    thought = await decide.get_by_test_id("ws-card-thought").inner_text()
    assert thought == cands[held]["thought"].replace("\u202e", "\\u202e").replace(
        "\u202c", "\\u202c"
    )
    feedback = await decide.get_by_test_id("ws-card-feedback").inner_text()
    assert "<answer>" not in feedback and "Checklist 1:" not in feedback
    assert feedback == (card["feedback"] or "—")
    others = await decide.get_by_test_id("ws-card-others").inner_text()
    assert f"#{other}" in others
    shown = cands[other]["action"].replace("\u200b", "\\u200b")
    assert shown in others and "\u200b" not in others
    # the target cut out of the screenshot: drawn, the target's colours inside the outline
    crop = decide.get_by_test_id("ws-card-crop")
    await panel.wait_for_function(
        "el => el.dataset.drawn === '1'", arg=await crop.element_handle(), timeout=10_000
    )
    width, height, outline = await crop.evaluate(
        """c => {
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let yellow = 0;
            for (let i = 0; i < d.length; i += 4)
              if (d[i] > 240 && d[i + 1] > 180 && d[i + 1] < 220 && d[i + 2] < 30) yellow++;
            return [c.width, c.height, yellow];
        }"""
    )
    box = card["target"]["box"]
    assert width > box[2] and height > box[3] and outline > 2 * (box[2] + box[3])
    # the popup shows the same card
    ext_id = browser.worker.url.split("/")[2]
    popup = await browser.ctx.new_page()
    await popup.goto(f"chrome-extension://{ext_id}/popup.html", wait_until="load")
    same = popup.locator(f"[data-testid=ws-decide][data-request-id='{req['request_id']}']")
    await same.wait_for(timeout=30_000)
    assert await same.get_by_test_id("ws-card-target").inner_text() == target
    await same.get_by_test_id("ws-card-crop").wait_for()
    # the overlay's feedback is the held candidate's parsed feedback, not the judge's stream
    overlay_feedback = page.get_by_test_id("ws-feedback")
    await overlay_feedback.wait_for()
    assert "<answer>" not in await overlay_feedback.inner_text()
    assert await overlay_feedback.inner_text() == card["feedback"]
    if SHOTS:
        await panel.set_viewport_size({"width": 420, "height": 900})
        await decide.screenshot(path=str(Path(SHOTS) / "card-click.png"))
    await decide.get_by_role("button", name="Reject").click()
    scored = await asyncio.wait_for(pending, 60)
    assert scored["decision"]["status"] == "rejected"


async def test_the_side_panel_card_for_a_guarded_form_submission(paired, pages_site):
    """A real daemon step on a POST checkout form: the page's facts (the form each control
    submits, its method and action) read from the DOM, the screenshot and boxes from the page;
    whichever candidate is best, it submits the form, so the guard holds it. The agent starts
    the session itself, text only (no `holds`): a session the paired extension starts through
    the page hook holds commits in the browser, where the rules only predict (issue 41)."""
    daemon, browser = paired
    url = f"{pages_site}/checkout.html"
    page = await browser.ctx.new_page()
    await page.set_viewport_size({"width": 800, "height": 400})
    await page.goto(url, wait_until="load")
    agent = await daemon.client(name="shop-agent")
    # a reference checklist: this test is about the guard and the card, not about the tiny
    # judge writing a checklist for a page it never saw
    started = await agent.request(
        {"type": "session.start", "intent": "Order the desk lamp", "start_url": url,
         "checklist": CHECKLIST}
    )  # fmt: skip
    assert started["type"] == "session.started", started
    sid = started["session_id"]
    granted = await agent.request({"type": "hook.grant", "session_id": sid})
    attached = await hook(page, "attach", key=granted["key"])  # the extension follows it
    assert (attached["type"], attached["session_id"]) == ("attached", sid), attached
    capture = await browser.capture(url)
    place = re.search(r"\[(\w+)\] button 'Place order'", capture["axtree"]).group(1)
    name = re.search(r"\[(\w+)\] textbox 'Name'", capture["axtree"]).group(1)
    boxes, elements = {}, {}
    for bid in (place, name):
        target = page.locator(f"[bid='{bid}']")
        b = await target.bounding_box()
        assert b is not None
        boxes[bid] = [b["x"], b["y"], b["width"], b["height"]]
        elements[bid] = await target.evaluate(
            """el => ({tag: el.tagName.toLowerCase(), submits: true,
                       form_method: el.form.method.toUpperCase(), form_action: el.form.action})"""
        )
    assert elements[place]["form_method"] == "POST"
    shot = base64.b64encode(await page.screenshot()).decode()  # device pixel ratio 1
    cands = [
        {"thought": "Everything is filled in; place the order.", "action": f"click('{place}')"},
        {"thought": "Submit with Enter.", "action": f"press('{name}', 'Enter')"},
    ]
    await agent.send(
        {
            "type": "score",
            "id": "g1",
            "session_id": sid,
            "observation": {
                "url": url,
                "axtree": capture["axtree"],
                "screenshot": {"mime": "image/png", "data": shot},
                "boxes": boxes,
                "elements": elements,
            },
            "candidates": cands,
            "samples": 1,
            "approval": "never",  # the reward policy would let it through: only the guard holds
        }
    )
    panel = await browser.open_panel()
    decide = panel.get_by_test_id("ws-decide")
    await decide.wait_for(timeout=90_000)
    why = await decide.get_by_test_id("ws-card-why").inner_text()
    lines = why.splitlines()
    assert lines[0].startswith("a guard holds it whatever the reward")
    assert lines[1].startswith("⚠ form_submit: ") and lines[1].endswith(
        f"submits a POST form to {pages_site}/orders"
    ), why
    target = await decide.get_by_test_id("ws-card-target").inner_text()
    assert target in (f"button “Place order” [{place}]", f"textbox “Name” [{name}]")
    leads = await decide.get_by_test_id("ws-card-destination").inner_text()
    assert leads == f"{pages_site}/orders"
    crop = decide.get_by_test_id("ws-card-crop")
    await panel.wait_for_function(
        "el => el.dataset.drawn === '1'", arg=await crop.element_handle(), timeout=10_000
    )
    if SHOTS:
        await panel.set_viewport_size({"width": 420, "height": 900})
        await decide.screenshot(path=str(Path(SHOTS) / "card-guarded-form.png"))
    await decide.get_by_role("button", name="Reject").click()
    scored = await agent.wait_for("scored", timeout=60)
    assert scored["decision"]["status"] == "rejected"
    assert [h["rule"] for h in scored["decision"]["guard"]][:1] == ["form_submit"]
