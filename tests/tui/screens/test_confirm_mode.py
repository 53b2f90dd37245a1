"""The question before a looser mode: it names the session, says what the new mode does, and
only ``y`` switches (escape keeps the mode). The live path (a paired TUI against a real daemon)
is tests/tui/test_modes_live.py."""

from __future__ import annotations

import pytest
from textual.app import App
from textual.widgets import Label
from webshepherd.protocol.modes import MODE_DOES
from webshepherd.tui.screens.confirm_mode import ConfirmModeScreen, question


def test_the_question_names_the_session_and_what_the_mode_does() -> None:
    q = question("my-agent (s-123)", "ask", "watch")
    assert "my-agent (s-123)" in q and "'ask' to 'watch'" in q
    assert MODE_DOES["watch"] in q
    assert "current mode" in question("s-1", None, "watch")


@pytest.mark.parametrize(("key", "answer"), [("y", True), ("escape", False)])
async def test_only_y_switches(key: str, answer: bool) -> None:
    got: list[bool | None] = []

    class Host(App[None]):
        def on_mount(self) -> None:
            self.push_screen(ConfirmModeScreen("s-1", "stop", "ask"), got.append)

    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        shown = str(app.screen.query_one("#confirm-mode", Label).content)
        assert "'stop' to 'ask'" in shown
        await pilot.press("x")  # a stray key decides nothing
        await pilot.pause()
        assert got == []
        await pilot.press(key)
        await pilot.pause()
    assert got == [answer]
