"""One demo run, one step rule (protocol/steps.py): the terminal and summary.json, the
recording (sessions.list), the TUI (sessions table, detail pane, history, replay), the HTML
report, the exports and the OpenTelemetry spans agree on what step N is and how many steps
the session has.

``webshepherd demo --keep --out`` runs as a user runs it (tiny judge); its kept recording is
then served by a real daemon the real TUI connects to under Pilot, rendered as the report,
exported, and its events turned into spans by the daemon's own exporter (in memory). What
the judge writes does not matter here: only where each surface puts the steps.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from textual.widgets import DataTable
from webshepherd.daemon.cli import main as cli
from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.offline.report.render import render_report
from webshepherd.daemon.recorder import History
from webshepherd.daemon.server.telemetry import OtlpExport
from webshepherd.protocol.steps import step_number
from webshepherd.protocol.union import SERVER_ADAPTER
from webshepherd.tui.app import WebShepherdApp
from webshepherd.tui.screens.history import HistoryScreen
from webshepherd.tui.screens.replay import ReplayScreen
from webshepherd.tui.widgets.reward_plot import RewardPlot
from webshepherd.tui.widgets.sessions_table import SessionsTable

from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.demo_cli import DEMO, demo_env, run_demo
from tests.tui.helpers import FixedProbe, screen_text, wait_for_text, wait_until

pytestmark = pytest.mark.model


def spans_of(history: History, session_id: str) -> list:
    """The session's recorded events (what subscribers got, what the daemon offers its OTLP
    export) turned into spans by :class:`OtlpExport`, read back from memory."""
    memory = InMemorySpanExporter()
    export = OtlpExport("http://127.0.0.1:9", exporter=memory)  # nothing is sent anywhere
    export.start()
    for event in history.events(session_id):
        export.offer(SERVER_ADAPTER.validate_python(event))
    export.close()
    return list(memory.get_finished_spans())


def export_rows(data_dir: Path, fmt: str, out: Path) -> list[dict]:
    argv = ["export", "--data-dir", str(data_dir), "--format", fmt, "--out", str(out)]
    assert cli([*argv, "--quiet"]) == 0
    return [json.loads(line) for line in out.read_text("utf-8").splitlines()]


async def test_every_surface_agrees_on_the_steps(tiny_model_path, tmp_path, start_daemon):
    env = demo_env(tmp_path, tiny_model_path, TMPDIR=str(tmp_path))  # --keep keeps it here
    out = tmp_path / "out"
    args = [*DEMO, "--keep", "--out", str(out), "--no-plot"]
    result = await asyncio.to_thread(run_demo, args, env, 400)
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    data_dir = Path(summary["data_dir"])
    assert data_dir.is_relative_to(tmp_path)

    # the terminal and summary.json: "step N" is the wire index + 1, counted from 1
    printed = [int(n) for n in re.findall(r"^step (\d+)  ", result.stdout, re.MULTILINE)]
    indices = [s["daemon_step"] for s in summary["steps"]]
    numbers = [step_number(i) for i in indices]
    n = len(printed)
    assert printed == [s["step"] for s in summary["steps"]] == numbers == list(range(1, n + 1))
    assert summary["totals"]["steps"] == n and f"placed in {n} steps" in result.stdout

    # the recording: sessions.list's count, each step scored and acted at once
    history = History.open(data_dir / DB_NAME)
    try:
        [listed] = history.list_sessions()
        sid = listed.session_id
        assert listed.steps == n
        tl = history.timeline(sid)
        assert tl is not None
        assert [st.step for st in tl.steps if st.scorings or st.executed] == indices

        # the HTML report: one section per step, headed and linked by its number
        html = render_report(tl)
        assert [int(k) for k in re.findall(r'<section class="step" id="step-(\d+)">', html)] == (
            numbers
        )
        assert [int(k) for k in re.findall(r"<h2>Step (\d+)</h2>", html)] == numbers
        assert re.search(rf"<dt>steps</dt><dd>{n} \(", html)

        # OpenTelemetry: one span per step, carrying the wire index; the root counts them
        spans = spans_of(history, sid)
        step_spans = [s for s in spans if s.parent is not None]
        assert sorted(s.attributes["webshepherd.step"] for s in step_spans) == indices
        [root] = [s for s in spans if s.parent is None]
        assert root.attributes["webshepherd.steps"] == n
    finally:
        history.close()

    # exports carry the wire index (step_id); every scored step has SFT rows
    sft = export_rows(data_dir, "sft", tmp_path / "sft.jsonl")
    assert sorted({r["step_id"] for r in sft if r["label"] != "reference"}) == indices
    webprm = export_rows(data_dir, "webprm", tmp_path / "webprm.jsonl")
    assert webprm and {int(r["step_id"]) for r in webprm} <= set(indices)
    assert cli(["export", "--data-dir", str(data_dir), "--format", "mind2web", "--quiet",
                "--out", str(tmp_path / "m2w")]) == 0  # fmt: skip
    result_json = json.loads((tmp_path / "m2w" / sid / "result.json").read_text("utf-8"))
    assert len(result_json["action_history"]) == n

    # the TUI on a daemon serving the recording: table, detail pane, plot, history, replay
    daemon = await start_daemon(base=data_dir.parent)
    app = WebShepherdApp(daemon.url, TEST_TOKEN, probe=FixedProbe(), refresh_s=0.1)
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.screen.query_one(SessionsTable)
        await wait_until(pilot, lambda: table.row_count == 1, what="the session's row")
        await wait_until(
            pilot, lambda: table.get_cell(sid, "steps") == str(n), what="the steps cell"
        )
        plot = app.screen.query_one(RewardPlot)
        await wait_until(pilot, lambda: len(plot.points[0]) == n, what="the plot's points")
        assert [x for x, _ in plot.points[0]] == numbers
        detail = (f"· {n} steps", f"step {numbers[-1]} candidates")
        await wait_until(  # the detail pane follows the table's selection a refresh later
            pilot, lambda: all(d in screen_text(app) for d in detail), what="the detail pane"
        )

        await pilot.press("h")
        assert isinstance(app.screen, HistoryScreen)
        rows = app.screen.query_one(DataTable)
        await wait_until(pilot, lambda: rows.row_count == 1, what="the history list")
        assert rows.get_cell(sid, "steps") == str(n)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ReplayScreen), what="replay")
        replay = app.screen
        assert isinstance(replay, ReplayScreen)
        await wait_until(pilot, lambda: replay.view is not None, what="the recorded history")
        assert len(replay.ends) == n  # one frame per step
        await pilot.press("G")
        await wait_for_text(pilot, app, f"step {numbers[-1]} ({n}/{n})")
