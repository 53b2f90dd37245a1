"""Untrusted strings in the TUI are plain text: markup in an intent neither crashes the monitor
nor styles anything, and markup in a candidate action is no clickable region (a real daemon and
its tiny model score; the test is about display, not about what the model writes)."""

from __future__ import annotations

import pytest
from webshepherd.tui.app import WebShepherdApp
from webshepherd.tui.plain import plain
from webshepherd.tui.widgets.approvals_table import ApprovalsPanel
from webshepherd.tui.widgets.sessions_table import SessionsTable

from tests.fixtures.daemon import TEST_TOKEN, start_session
from tests.tui.helpers import FixedProbe, screen_text, wait_until

pytestmark = pytest.mark.model

CLICK_APPROVE = "[@click=screen.decide('approve')]click('12')[/]"


def tui(url: str) -> WebShepherdApp:
    return WebShepherdApp(url, TEST_TOKEN, probe=FixedProbe(), refresh_s=0.1, backoff_max_s=0.5)


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
        assert "[red]bot" in screen_text(app)
        await pilot.press("o")  # the replay screen's title shows the intent too
        await wait_until(pilot, lambda: "Buy a [/] lamp" in screen_text(app), what="replay")
    assert app.return_code in (None, 0)


async def test_a_candidate_action_with_click_markup_approves_nothing(daemon):
    agent = await daemon.client(name="agent-1")
    sid = await start_session(agent)
    app = tui(daemon.url)
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
        await pilot.pause(0.5)
        assert panel.table.row_count == 1
        assert len(app.state.approvals) == 1
        assert not [m for m in agent.inbox if m.get("id") == "s1"]  # no decision came back
        # a person's key still decides it
        await pilot.press("r")
        scored = await agent.wait_for(lambda m: m.get("id") == "s1", timeout=30)
        assert scored["decision"]["status"] == "rejected"
