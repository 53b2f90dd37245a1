"""Columns as wide as their content at 80 columns: every header and a typical agent name in
full in the sessions, approvals and recorded-sessions tables, the intent or action cut to the
rest, nothing scrolled out of sight; a name past NAME_MAX is cut with an ellipsis. Generated
events, no model."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable
from webshepherd.protocol.common import SessionSummary
from webshepherd.tui.app import WebShepherdApp
from webshepherd.tui.screens.history import HistoryScreen
from webshepherd.tui.state import MonitorState
from webshepherd.tui.widgets.fit import NAME_MAX, fit
from webshepherd.tui.widgets.sessions_table import SessionsTable

from tests.tui.events import session_events
from tests.tui.helpers import FixedProbe, screen_text, wait_for_text, wait_until

AGENT = "webshepherd-demo"
LONG = "an-agent-with-a-name-far-too-long-for-any-column"
INTENT = "Buy the cheapest USB-C cable that is at least two metres long and ships today"


def state() -> MonitorState:
    s = MonitorState()
    events = session_events(
        "s-demo", 12, seed=1, agent=AGENT, intent=INTENT, approval_at=12, resolve_approval=False
    ) + session_events("s-long", 3, seed=2, agent=LONG, created=1_700_000_100.0)
    for e in events:
        s.fold_raw(e)
    return s


def table_fits(table: DataTable) -> None:
    assert table.virtual_size.width <= table.size.width, (table.virtual_size, table.size)


def row_with(text: str, needle: str) -> str:
    return next(line for line in text.splitlines() if needle in line)


async def test_tables_fit_80_columns():
    app = WebShepherdApp(connect=False, state=state(), probe=FixedProbe())
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.main.query_one(SessionsTable)
        await wait_until(pilot, lambda: app.main.ready and table.row_count == 2, what="rows")
        await wait_for_text(pilot, app, " intent ", AGENT, "waiting at step")
        text = screen_text(app)
        header = row_with(text, "intent")
        for name in ("agent", "intent", "steps", "reward", "state"):
            assert f" {name} " in f"{header} ", header
        row = row_with(text, AGENT)
        assert "waiting at step 13" in row, row  # the held step (index 12), not "running"
        assert "Buy the cheapest" in row and "…" in row  # the intent takes the rest, cut
        assert LONG[: NAME_MAX - 1] + "…" in text and LONG not in text
        table_fits(table)

        await pilot.press("2")
        approvals = app.main.approvals.table
        await wait_until(pilot, lambda: approvals.row_count == 1, what="the approval")
        await wait_for_text(pilot, app, " reason ", "below_threshold")
        text = screen_text(app)
        header = row_with(text, "reason")
        for name in ("session", "step", "reward", "reason", "action"):
            assert f" {name} " in f"{header} ", header
        assert AGENT in row_with(text, "below_threshold")
        table_fits(approvals)

        async def summaries() -> list[SessionSummary]:
            return [
                SessionSummary.model_validate(
                    {
                        "session_id": "s-demo",
                        "intent": INTENT,
                        "agent": {"name": AGENT},
                        "state": "ended",
                        "outcome": "success",
                        "steps": 12,
                        "created_at": 1_700_000_000.0,
                        "latest_reward": 0.5,
                    }
                )
            ]

        history = HistoryScreen(load=summaries)
        await app.push_screen(history)
        listed = history.query_one(DataTable)
        await wait_until(pilot, lambda: listed.row_count == 1, what="the recorded session")
        await wait_for_text(pilot, app, " started ", "success")
        text = screen_text(app)
        header = row_with(text, "started")
        for name in ("started", "agent", "steps", "reward", "state", "intent"):
            assert f" {name} " in f"{header} ", header
        row = row_with(text, AGENT)
        assert "success" in row and "Buy the" in row, row
        table_fits(listed)


@pytest.mark.parametrize("room", [80, 60])
def test_fit_gives_the_flexible_column_the_rest(room):
    rows = [("webshepherd-demo", "a long intent " * 5, "12"), ("x", "short", "7")]
    widths = fit(("agent", "intent", "steps"), rows, "intent", room)
    assert widths["agent"] == len("webshepherd-demo") and widths["steps"] == len("steps")
    assert sum(widths.values()) + 2 * 3 == room
