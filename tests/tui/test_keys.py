"""The help screen names each screen's keys as its footer does, and every key it lists
reaches its action on that screen (none is taken first by a focused widget); the replay's
home and end. Recorded events, no model."""

from __future__ import annotations

import pytest
from textual.screen import Screen
from textual.widgets import Static
from textual.widgets._footer import FooterKey
from webshepherd.protocol.common import SessionSummary
from webshepherd.tui.app import WebShepherdApp
from webshepherd.tui.keys import APP, SECTIONS, Key
from webshepherd.tui.screens.help import HelpScreen
from webshepherd.tui.screens.history import HistoryScreen
from webshepherd.tui.screens.main import MainScreen
from webshepherd.tui.screens.replay import ReplayScreen
from webshepherd.tui.widgets.session_detail import SessionDetail

from tests.tui.helpers import screen_text, wait_until
from tests.tui.test_snapshots import offline_app, ready, recorded_session


async def no_sessions() -> list[SessionSummary]:
    return []


def help_lines(app: WebShepherdApp) -> dict[str, list[str]]:
    """The help screen's text, section by section (title -> its lines)."""
    static = app.screen.query_one(Static)
    assert isinstance(app.screen, HelpScreen)
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in str(static.render()).splitlines():
        if line and not line.startswith(" "):
            current = sections.setdefault(line, [])
        elif line.strip():
            current.append(line)
    return sections


def footer(screen: Screen) -> set[tuple[str, str]]:
    return {(k.key_display, k.description) for k in screen.query(FooterKey)}


def section_of(screen: Screen) -> str:
    return {MainScreen: "live sessions", HistoryScreen: "recorded sessions (h)"}.get(
        type(screen), "replay (o, or enter in h)"
    )


async def check_screen(pilot, app: WebShepherdApp, screen: Screen) -> None:
    title = section_of(screen)
    entries = dict(SECTIONS)[title] + APP
    keys = [e for e in entries if isinstance(e, Key)]
    # the footer shows exactly the keys the help lists for this screen as footer keys ...
    expected = {(k.shown, k.label) for k in keys if k.footer}
    await wait_until(
        pilot, lambda: footer(screen) == expected, what="the footer's keys",
        observe=lambda: footer(screen),
    )  # fmt: skip
    shown = footer(screen)
    await pilot.press("question_mark")
    await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
    lines = help_lines(app)
    await pilot.press("escape")
    await wait_until(pilot, lambda: app.screen is screen, what="the help to close")
    # ... and the help names each by the footer's name for it, with its line
    text = "\n".join(lines[title] + lines["everywhere"])
    for shown_key, label in shown:
        key = next(k for k in keys if k.label == label)
        assert f"{shown_key:<7} {key.help}" in text, (shown_key, text)
    # the footer shows them all, even at 80 columns
    await wait_until(
        pilot,
        lambda: all(f"{k} {label}" in screen_text(app).splitlines()[-1] for k, label in shown),
        what="the footer's bottom line",
        observe=lambda: screen_text(app).splitlines()[-1],
    )
    bottom = screen_text(app).splitlines()[-1]
    for shown_key, label in shown:
        assert f"{shown_key} {label}" in bottom, (shown_key, label, bottom)
    # every key the help lists reaches its action here, whatever has the focus
    active = screen.active_bindings
    for key in keys:
        for name in key.keys.split(","):
            assert name in active, (name, title)
            assert active[name].binding.action == key.action, (name, active[name].binding)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_help_and_footers_name_the_same_keys(size):
    app = offline_app()
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        await check_screen(pilot, app, app.main)
        history = HistoryScreen(load=no_sessions)
        await app.push_screen(history)
        await check_screen(pilot, app, history)
        await app.pop_screen()
        replay = ReplayScreen(reply=recorded_session("s-running"))
        await app.push_screen(replay)
        replay.query_one(SessionDetail).focus()  # a scrollable detail has its own home/end
        await check_screen(pilot, app, replay)


async def test_replay_home_and_end_reach_the_screen():
    app = offline_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        replay = ReplayScreen(reply=recorded_session("s-running"))
        await app.push_screen(replay)
        await wait_until(pilot, lambda: replay.view is not None, what="the replay's session")
        detail = replay.query_one(SessionDetail)
        detail.focus()
        # the detail overflows: it would take home/end
        await wait_until(pilot, lambda: detail.allow_vertical_scroll, what="the detail's scroll")
        last = len(replay.ends) - 1
        assert last > 1
        await pilot.press("end")
        assert replay.frame == last
        await pilot.press("home")
        assert replay.frame == 0
        await pilot.press("right", "G")
        assert replay.frame == last
        await pilot.press("left", "g")
        assert replay.frame == 0


def test_a_key_means_one_thing_on_every_screen():
    """`r` rejected on the live screen and wrote a report in the history: no key may do two
    things (escape aside: it always leaves what is open)."""
    meaning: dict[str, set[str]] = {}
    for _title, entries in SECTIONS:
        for e in entries:
            if isinstance(e, Key):
                for name in e.keys.split(","):
                    meaning.setdefault(name, set()).add(e.action)
    twice = {k: v for k, v in meaning.items() if len(v) > 1 and k != "escape"}
    assert twice == {}
    assert meaning["m"] == {"mode"} and meaning["w"] == {"report"}
