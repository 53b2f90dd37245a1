"""Layout snapshots of every screen at 80×24 and 160×48, from recorded events (no model)."""

from __future__ import annotations

import pytest
from textual.widgets import Input
from webshepherd.protocol.replies import Session
from webshepherd.tui.app import WebShepherdApp
from webshepherd.tui.screens.edit_action import EditActionScreen
from webshepherd.tui.screens.help import HelpScreen
from webshepherd.tui.screens.replay import ReplayScreen
from webshepherd.tui.widgets.sessions_table import SessionsTable

from tests.tui.events import load_recorded
from tests.tui.helpers import FixedProbe, recorded_state, settled_snapshot, wait_until

SIZES = [(80, 24), (160, 48)]


def offline_app() -> WebShepherdApp:
    app = WebShepherdApp(connect=False, state=recorded_state(), probe=FixedProbe())
    app.animation_level = "none"  # the tab underline slides otherwise: not a stable frame
    return app


def recorded_session(sid: str) -> Session:
    events = [e for e in load_recorded() if e.get("session_id") == sid]
    checklist = next(e for e in events if e["type"] == "checklist")
    return Session.model_validate(
        {
            "type": "session",
            "id": "m1",
            "checklist": checklist,
            "session": {
                "session_id": sid,
                "intent": "Buy the cheapest USB-C cable",
                "agent": {"name": "shop-agent"},
                "state": "running",
                "steps": 14,
                "created_at": 1_700_000_010.0,
            },
            "events": [e for e in events if e["type"] != "checklist"],
        }
    )


async def ready(pilot, app: WebShepherdApp) -> None:
    """Wait until the main screen shows the state (mounting takes a few frames under load)."""
    await wait_until(
        pilot,
        lambda: app.main.ready and app.main.query_one(SessionsTable).row_count == 3,
        what=f"the main screen ({app.screen}, {app.main.is_mounted}, "
        f"{[t.row_count for t in app.main.query(SessionsTable)]})",
    )


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize(
    ("name", "keys"),
    [
        ("sessions", []),  # the newest session, waiting for approval, is selected
        ("sessions-signals", ["down"]),  # the running one: a repeated action and a signal
        ("approvals", ["2"]),
        ("edit", ["2", "e"]),  # the edit input over the approvals tab
        ("device", ["3"]),
        ("help", ["question_mark"]),
    ],
)
async def test_main_screens(name, keys, size):
    app = offline_app()
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        for key in keys:
            await pilot.press(key)
        await pilot.wait_for_scheduled_animations()
        if name == "help":
            await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        if name == "edit":
            await wait_until(pilot, lambda: isinstance(app.screen, EditActionScreen), what="edit")
            assert app.screen.query_one(Input).value == "scroll(0, 300)"
        await settled_snapshot(pilot, app, f"{name}-{size[0]}x{size[1]}")


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_replay_screen(size):
    app = offline_app()
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        screen = ReplayScreen(reply=recorded_session("s-running"))
        await app.push_screen(screen)
        await wait_until(pilot, lambda: screen.view is not None, what="the replay's session")
        for key in ("right", "right", "right", "right"):
            await pilot.press(key)
        assert screen.view is not None and screen.view.current is not None
        assert screen.view.current.step == 5
        await settled_snapshot(pilot, app, f"replay-{size[0]}x{size[1]}")
