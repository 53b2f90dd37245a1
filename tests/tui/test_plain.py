"""Untrusted strings in the TUI are plain text: markup in an intent neither crashes the monitor
nor styles anything, and markup in a candidate action is no clickable region (a real daemon and
its tiny model score; the test is about display, not about what the model writes)."""

from __future__ import annotations

import pytest
from webshepherd.tui.app import WebShepherdApp
from webshepherd.tui.plain import counted, plain
from webshepherd.tui.widgets.approvals_table import ApprovalsPanel
from webshepherd.tui.widgets.sessions_table import SessionsTable

from tests.fixtures.daemon import TEST_TOKEN, start_session
from tests.tui.helpers import FixedProbe, screen_text, wait_until

pytestmark = pytest.mark.model

CLICK_APPROVE = "[@click=screen.decide('approve')]click('12')[/]"


def tui(url: str, approver: str | None = None) -> WebShepherdApp:
    return WebShepherdApp(
        url, TEST_TOKEN, probe=FixedProbe(), refresh_s=0.1, backoff_max_s=0.5, approver=approver
    )


def test_plain_keeps_markup_and_shows_controls():
    text = plain("[b]x[/b] \x1b]52;c;aGk=\x07 \u202e")
    assert text.plain == "[b]x[/b] \\x1b]52;c;aGk=\\x07 \\u202e"
    assert text.spans == []
    assert plain("a\nb", multiline=True).plain == "a\nb"
    assert plain("a\nb").plain == "a\\x0ab"


async def test_an_intent_with_markup_is_shown_literally(daemon):
    agent = await daemon.client(name="agent-[b]1")
    await start_session(agent, intent="Buy a [/] lamp", agent={"name": "[red]bot"})
    app = tui(daemon.url)
    async with app.run_test(size=(110, 30)) as pilot:
        table = app.screen.query_one(SessionsTable)
        await wait_until(pilot, lambda: table.row_count == 1, what="the session's row")
        await wait_until(pilot, lambda: "Buy a [/] lamp" in screen_text(app), what="the intent")
        await wait_until(pilot, lambda: "[red]bot" in screen_text(app), what="the agent")
        await pilot.press("o")  # the replay screen's title shows the intent too
        await wait_until(pilot, lambda: "Buy a [/] lamp" in screen_text(app), what="replay")
    assert app.return_code in (None, 0)


async def test_a_candidate_action_with_click_markup_approves_nothing(daemon):
    agent = await daemon.client(name="agent-1")
    sid = await start_session(agent)
    app = tui(daemon.url, await daemon.approver("monitor", "webshepherd-tui"))  # a person's
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: app.link.catch_ups >= 1, what="connected")
        panel = app.screen.query_one(ApprovalsPanel)
        await pilot.press("2")
        cands = [{"thought": "[@click=app.quit]t[/]", "action": CLICK_APPROVE}]
        await agent.send(
            {
                "type": "score",
                "id": "s1",
                "session_id": sid,
                "candidates": cands,
                "samples": 1,
                "approval": "always",
            }
        )
        await wait_until(pilot, lambda: panel.table.row_count == 1, what="the request")
        await wait_until(pilot, lambda: CLICK_APPROVE in screen_text(app), what="the action")
        lines = screen_text(app).splitlines()
        spots = [
            (line.index(CLICK_APPROVE) + k, y)
            for y, line in enumerate(lines)
            if CLICK_APPROVE in line
            for k in (1, 34, 40)
        ]
        assert len(spots) >= 6  # the table's row and the detail below it
        for x, y in spots:
            await pilot.click(offset=(x, y))
            await pilot.pause()
        # had a click sent a decision, it went out before the `r` below: the reply says
        assert panel.table.row_count == 1
        assert len(app.state.approvals) == 1
        assert not [m for m in agent.inbox if m.get("id") == "s1"]  # no decision came back
        # a person's key still decides it
        await pilot.press("r")
        scored = await agent.wait_for(lambda m: m.get("id") == "s1", timeout=30)
        assert scored["decision"]["status"] == "rejected"


# One hostile string per character class: where each is shown, the screen must carry its
# escape (protocol/terminal_text.py) and none of its characters.
CLASSES = {
    "bidi control": "\u202e91\u202c\u2066",
    "zero-width": "1\u200b3\u2060\ufeff",
    "tag": "\U000e0049\U000e0067",
    "variation selector": "ok\ufe0f\U000e0100",
    "soft hyphen": "Pay\u00adPal",
    "combining grapheme joiner": "a\u034fb",
    "Hangul filler": "\u3164\u115f",
    "Mongolian vowel separator": "m\u180en",
    "interlinear annotation": "\ufff9x\ufffb",
    "C0 control": "\x1b[2J\x07",
    "C1 control": "\x9b\x85",
    "line separator": "l\u2028s",
}
GOTO = "goto('https://pаypal.com/')"  # a Cyrillic а


def hostile_events() -> list[dict[str, object]]:
    """A session whose texts carry every class: the intent and agent, checklist titles, the
    candidates' actions and thoughts, and a held step's action, card, thought and feedback."""
    from tests.tui.events import session_events

    values = list(CLASSES.values())
    ev = session_events(
        "s-hostile",
        2,
        seed=3,
        agent="bot\u202e",
        intent="Buy\u200b a lamp \u202egnp.exe",
        approval_at=2,
        resolve_approval=False,
        outcome=None,
    )
    for e in ev:
        if e["type"] == "checklist":
            for k, item in enumerate(e["items"]):
                item["title"] = f"item {k} " + " ".join(values[k * 3 : k * 3 + 3])
        if e["type"] == "scored":
            for k, c in enumerate(e["candidates"]):
                c["action"] = GOTO if k == 0 else f"click('{values[k]}')"
            e["decision"]["action"] = GOTO
        if e["type"] == "approval.request":
            e["candidate"] = {"thought": "t " + values[0], "action": f"fill('14', '{values[0]}')"}
            e["feedback"] = "f " + values[1]
            e["card"] = {
                "target": {"bid": "14", "role": "textbox", "name": "amount " + values[2]},
                "destination": "https://pаypal.com/pay",
                "typed": " ".join(values),
                "thought": "thought " + values[3],
                "feedback": "feedback " + values[4],
                "others": [{"index": 1, "action": GOTO, "reward": 0.5}],
            }
    return ev


def hidden(text: str) -> list[str]:
    from webshepherd.protocol.terminal_text import ESCAPED_RANGES

    inside = {c for lo, hi, _ in ESCAPED_RANGES for c in range(lo, hi + 1)} - {0x0A}
    return [f"U+{ord(c):04X}" for c in text if ord(c) in inside]


async def test_every_character_class_is_shown_as_an_escape():
    from webshepherd.protocol.terminal_text import terminal_safe
    from webshepherd.tui.state import MonitorState

    state = MonitorState()
    for e in hostile_events():
        state.fold_raw(e)
    app = WebShepherdApp(connect=False, state=state, probe=FixedProbe())
    async with app.run_test(size=(220, 60)) as pilot:
        await wait_until(pilot, lambda: app.main.ready, what="the main screen")
        table = app.main.query_one(SessionsTable)
        await wait_until(pilot, lambda: table.row_count == 1, what="the session's row")
        await wait_until(pilot, lambda: "\\u202egnp.exe" in screen_text(app), what="the intent")
        shown_goto = "goto('https://xn--pypal-4ve.com/')"
        await wait_until(pilot, lambda: shown_goto in screen_text(app), what="the candidates")
        main = screen_text(app)
        assert hidden(main) == []
        assert "Buy\\u200b a lamp \\u202egnp.exe" in main and "bot\\u202e" in main
        assert "goto('https://xn--pypal-4ve.com/')" in main and "pаypal" not in main
        for raw in list(CLASSES.values())[:12]:  # the checklist titles carry all twelve
            assert terminal_safe(raw) in main, f"{raw!a} not shown as {terminal_safe(raw)!r}"
        await pilot.press("2")
        panel = app.screen.query_one(ApprovalsPanel)
        await wait_until(pilot, lambda: panel.table.row_count == 1, what="the held step")
        await wait_until(pilot, lambda: "types" in screen_text(app), what="the card")
        card = screen_text(app)
        assert hidden(card) == []
        assert "fill('14', '\\u202e91\\u202c\\u2066')" in card  # not fill('14', '19')
        assert "https://xn--pypal-4ve.com/pay" in card and "pаypal" not in card
        flat = " ".join(line.strip() for line in card.splitlines())
        for cls, raw in CLASSES.items():  # the typed text carries every class
            assert terminal_safe(raw) in flat, f"{cls}: {terminal_safe(raw)!r} not in the card"


def test_counted_says_one_step_and_two_steps():
    assert [counted(n, "step") for n in (0, 1, 2)] == ["0 steps", "1 step", "2 steps"]
    assert counted(1, "flagged commit") == "1 flagged commit"
    assert counted(3, "entry", "entries") == "3 entries"
