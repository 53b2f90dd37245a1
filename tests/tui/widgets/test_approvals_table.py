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
from webshepherd.tui.widgets.approvals_table import ApprovalsPanel
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
