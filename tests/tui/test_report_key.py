"""The history screen's ``r`` writes the selected session's HTML report (real daemon, real
recording, Pilot)."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.tui.app import WebShepherdApp
from webshepherd.tui.screens.history import HistoryScreen, write_report

from tests.fixtures.daemon import TEST_TOKEN, start_session
from tests.tui.helpers import FixedProbe, wait_until
from tests.tui.test_live import step

pytestmark = pytest.mark.model


async def test_history_w_writes_the_selected_report(daemon, tmp_path):
    agent = await daemon.client(name="agent-1")
    older = await start_session(agent, agent={"name": "older"})
    await step(agent, older, 1)
    sid = await start_session(agent, agent={"name": "newer"})
    for n in (1, 2):
        await step(agent, sid, n)
    app = WebShepherdApp(
        daemon.url,
        TEST_TOKEN,
        probe=FixedProbe(),
        data_dir=daemon.config.data_dir,
        report_dir=tmp_path / "reports",
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.link.catch_ups >= 1, what="connected")
        await pilot.press("h")
        history = app.screen
        assert isinstance(history, HistoryScreen)
        rows = history.query_one(DataTable)
        await wait_until(pilot, lambda: rows.row_count == 2, what="the history list")
        await pilot.press("down")  # the older session
        await pilot.press("w")
        await wait_until(pilot, lambda: history.last_report is not None, what="the report")
        assert history.last_report == tmp_path / "reports" / f"webshepherd-{older}.html"
        html = history.last_report.read_text()
        assert "older" in html and "<svg" in html
        await pilot.press("up", "w")
        target = tmp_path / "reports" / f"webshepherd-{sid}.html"
        await wait_until(pilot, lambda: history.last_report == target, what="the second report")
        assert html.count('class="step"') < target.read_text().count('class="step"')


async def test_report_of_an_unknown_session_is_a_clear_error(tmp_path):
    """The report runs as ``webshepherd report`` in a child process; its error comes back."""
    with pytest.raises(WebShepherdError, match="no recording at "):
        await write_report("nope", tmp_path / "nope.html", tmp_path)
    assert not (tmp_path / "nope.html").exists()
