"""The Approvals tab's card under Pilot: target, destination, typed text, why it waits, thought,
feedback, the other candidates, the target cut out of the screenshot, all escaped; and the
main screen's session detail shows the intent in full."""

from __future__ import annotations

import base64
import io

from PIL import Image, ImageDraw
from textual.widgets import Static
from webshepherd.tui.app import WebShepherdApp
from webshepherd.tui.state import MonitorState
from webshepherd.tui.widgets.approvals_table import COMMIT_KEYS, ApprovalsPanel
from webshepherd.tui.widgets.session_detail import SessionDetail
from webshepherd.tui.widgets.target_crop import target_crop

from tests.tui.helpers import FixedProbe, screen_text, wait_for_text, wait_until

INTENT = (
    "Find the zebra-striped USB-C cable of two metres with braided nylon, the cheapest one "
    "that ships today, and order it to the office in Leeds"
)
BOX = [120, 90, 100, 40]  # the target on the screenshot: left, top, width, height
RED = (220, 20, 20)


def screenshot() -> str:
    """A white page with the target drawn red at BOX, as a base64 PNG."""
    img = Image.new("RGB", (400, 300), "white")
    left, top, width, height = BOX
    ImageDraw.Draw(img).rectangle((left, top, left + width - 1, top + height - 1), fill=RED)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return base64.b64encode(buf.getvalue()).decode()


def held_state(*, guarded: bool) -> MonitorState:
    state = MonitorState(clock=lambda: 1_700_000_000.0)
    state.fold_raw(
        {
            "type": "session.started",
            "session_id": "s1",
            "intent": INTENT,
            "agent": {"name": "shop-agent"},
        }
    )
    state.fold_raw(
        {
            "type": "approval.request",
            "request_id": "q1",
            "session_id": "s1",
            "step": 3,
            "candidate": {"thought": "Pay \u202eevil\u202c now.", "action": "click('13')"},
            "candidate_index": 0,
            "reward": 0.91 if guarded else 0.12,
            "feedback": "raw",
            "reason": "guarded" if guarded else "below_threshold",
            "expires_in_s": 120.0,
            "threshold": 0.3,
            "guard": (
                [{"rule": "form_submit", "detail": "submits a POST form to /checkout"}]
                if guarded
                else []
            ),
            "card": {
                "target": {"bid": "13", "role": "button", "name": "Place\u200b order", "box": BOX},
                "destination": "https://p\u0430ypal.com/checkout",
                "typed": "usb-c\U000e0041",
                "thought": "Pay \u202eevil\u202c now.",
                "feedback": "The order button commits the purchase.",
                "others": [
                    {"index": 2, "action": "go_back()", "reward": 0.4},
                    {"index": 1, "action": "scroll(0, 300)", "reward": None},
                ],
                "screenshot": {"mime": "image/png", "data": screenshot()},
            },
        }
    )
    return state


def app_of(state: MonitorState) -> WebShepherdApp:
    app = WebShepherdApp(connect=False, state=state, probe=FixedProbe())
    app.animation_level = "none"
    return app


async def shown_card(pilot, app: WebShepherdApp) -> str:
    await wait_until(pilot, lambda: app.main.ready, what="the main screen")
    await pilot.press("2")
    panel = app.screen.query_one(ApprovalsPanel)
    await wait_until(pilot, lambda: panel.selected is not None, what="the request")
    await wait_for_text(pilot, app, "target    ", "waits     ", "feedback  ")
    return screen_text(app)


async def test_the_card_shows_target_destination_typed_text_and_the_others_escaped() -> None:
    app = app_of(held_state(guarded=False))
    async with app.run_test(size=(120, 48)) as pilot:
        text = await shown_card(pilot, app)
    assert "target    button 'Place\\u200b order' [13]" in text
    assert "leads to  https://xn--pypal-4ve.com/checkout" in text  # punycode host
    assert "types     'usb-c\\U000e0041'" in text
    assert "waits     reward 0.120 is below the threshold 0.30" in text
    assert "thought   Pay \\u202eevil\\u202c now." in text
    assert "feedback  The order button commits the purchase." in text
    assert "raw" not in text.split("feedback  ", 1)[1].split("\n", 1)[0]
    # the others best first, an unscored one last
    assert "others    #2 0.400  go_back()" in text
    assert "          #1   —    scroll(0, 300)" in text
    for c in ("\u202e", "\u200b", "\U000e0041", "\u0430"):
        assert c not in text


async def test_a_guarded_card_says_why_it_waits() -> None:
    app = app_of(held_state(guarded=True))
    async with app.run_test(size=(120, 48)) as pilot:
        text = await shown_card(pilot, app)
    assert "waits     a guard holds it whatever the reward (0.910)" in text
    assert "⚠ form_submit: submits a POST form to /checkout" in text


async def test_the_target_is_cut_out_of_the_screenshot_in_half_blocks() -> None:
    app = app_of(held_state(guarded=False))
    async with app.run_test(size=(120, 48)) as pilot:
        text = await shown_card(pilot, app)
        assert app.screen.query_one("#approval-crop", Static).display
    # 132 x 72 pixels of page (the box and its margins) scaled into 72 x 10 cells: 37 x 10
    rows = [line.strip() for line in text.splitlines() if "▀" in line]
    assert [len(r) for r in rows] == [37] * 10 and set("".join(rows)) == {"▀"}
    crop = target_crop(screenshot(), BOX, 72, 10)
    assert crop is not None and crop.plain == "\n".join(rows)


async def test_no_crop_without_a_box() -> None:
    state = held_state(guarded=False)
    card = state.approvals["q1"].card
    assert card is not None and card.target is not None
    card.target.box = None
    app = app_of(state)
    async with app.run_test(size=(120, 48)) as pilot:
        text = await shown_card(pilot, app)
        assert not app.screen.query_one("#approval-crop", Static).display
    assert "▀" not in text and "target    button" in text


async def test_the_selected_sessions_intent_is_shown_in_full_at_120x40() -> None:
    app = app_of(held_state(guarded=False))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.main.ready, what="the main screen")
        detail = app.screen.query_one(SessionDetail)
        await wait_until(pilot, lambda: detail.view is not None, what="the detail")

        def shown_in_detail() -> str:
            x = detail.region.x
            lines = [line[x:] for line in screen_text(app).splitlines()]
            return " ".join(" ".join(lines).split())

        await wait_until(pilot, lambda: INTENT in shown_in_detail(), what="the intent")
        shown = shown_in_detail()
    assert INTENT in shown
    assert "shop-agent · waiting at step 4 · 1 step " in shown  # the held step, one step


NOW = 1_700_000_000.0


def paused_state() -> MonitorState:
    """A request the browser paused, its card naming the step that caused it (issue 51.2)."""
    state = MonitorState(clock=lambda: NOW)
    state.fold_raw({"type": "session.started", "session_id": "s1", "intent": INTENT})
    state.fold_raw(
        {
            "type": "approval.request",
            "request_id": "q2",
            "session_id": "s1",
            "step": 3,
            "candidate": {"thought": "", "action": "click('18')"},
            "candidate_index": None,
            "reward": None,
            "reason": "commit",
            "expires_in_s": 120.0,
            "card": {
                "target": {"bid": "18", "role": "button", "name": "Add to\u202e cart", "box": BOX},
                "screenshot": {"mime": "image/png", "data": screenshot()},
                "headline": "Waiting for you: this sends a POST to shop.test/cart/add",
                "request": {
                    "method": "POST",
                    "url": "http://shop.test/cart/add",
                    "kind": "write",
                    "fields": [{"name": "id", "value": "c2"}, {"name": "qty", "value": "2"}],
                    "body_bytes": 10,
                    "trigger": "click('18')",
                    "element": "18",
                },
                "why": "The session's mode is 'ask': a request that sends data to keep waits.",
                "labels": [{"name": "qty", "label": "Quantity"}],
                "amounts": ["Price: $4.99", "Total: \u200b$9.98"],
                "judge": {"step": 3, "reward": 0.81, "item": 2, "item_title": "Add the cable"},
                "expires_at": NOW + 105.0,
                "on_approve": "The browser sends this POST once, exactly as shown.",
                "on_reject": "Nothing is sent; the agent is told that a person refused it.",
            },
        }
    )
    return state


async def test_a_paused_requests_card_reads_in_the_tasks_words() -> None:
    app = app_of(paused_state())
    async with app.run_test(size=(120, 48)) as pilot:
        await wait_until(pilot, lambda: app.main.ready, what="the main screen")
        await pilot.press("2")
        await wait_for_text(pilot, app, "clicked   ", "time left ")
        text = screen_text(app)
    assert "clicked   button 'Add to\\u202e cart' [18]" in text
    assert "sends     id = c2" in text
    assert "          Quantity (qty) = 2" in text
    assert "page says Price: $4.99" in text and "          Total: \\u200b$9.98" in text
    assert "waits     The session's mode is 'ask': a request that sends data to keep waits." in text
    assert "judge     reward 0.810 at step 4 · serves item 2: Add the cable" in text
    assert "time left 1:45 (until " in text and "; then refused)" in text
    assert "approve   The browser sends this POST once, exactly as shown." in text
    assert "reject    Nothing is sent; the agent is told that a person refused it." in text
    assert "the browser paused a request that commits" not in text
    assert "▀" in text  # the crop


async def test_the_decide_line_fits_80x24() -> None:
    app = app_of(paused_state())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.main.ready, what="the main screen")
        await pilot.press("2")
        keys = app.screen.query_one("#approval-keys", Static)
        await wait_for_text(pilot, app, COMMIT_KEYS)
        region = keys.region
        assert region.height == 1 and region.right <= 80 and region.bottom <= 24
        (line,) = [ln for ln in screen_text(app).splitlines() if "a approve" in ln]
        assert line.strip() == COMMIT_KEYS
