"""The daemon's recorded sessions (``sessions.list``); enter replays one, ``w`` writes its
HTML report (from the local recording, as ``webshepherd report`` does)."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from webshepherd.protocol.common import SessionSummary
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.terminal_text import terminal_safe
from webshepherd.tui.keys import HISTORY, bindings
from webshepherd.tui.plain import plain
from webshepherd.tui.screens.messages import ReplayRequested
from webshepherd.tui.widgets.fit import Cell, fit, name_cell, room, shown
from webshepherd.tui.widgets.session_detail import fmt_reward

LoadSessions = Callable[[], Awaitable[list[SessionSummary]]]


COLUMNS = ("started", "agent", "steps", "reward", "state", "intent")
FLEX = "intent"  # the rest of the width (tui/widgets/fit.py)


class HistoryScreen(Screen[None]):
    DEFAULT_CSS = """
    HistoryScreen > #history-title { height: 1; padding: 0 1; background: $boost; }
    HistoryScreen > DataTable { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = bindings(HISTORY)

    def __init__(
        self,
        load: LoadSessions,
        data_dir: Path | None = None,
        report_dir: Path | None = None,
    ) -> None:
        super().__init__()
        self.load = load
        self.data_dir = data_dir
        self.report_dir = report_dir
        self.summaries: list[SessionSummary] = []
        self.last_report: Path | None = None

    def compose(self) -> ComposeResult:
        yield Static(
            "recorded sessions (newest first) — enter replays, w writes its HTML report, "
            "escape goes back",
            id="history-title",
        )
        yield DataTable(cursor_type="row", id="history")
        yield Footer()

    def on_mount(self) -> None:
        self._show()
        self.action_reload()

    def on_resize(self) -> None:
        self._show()

    def _show(self) -> None:
        """The sessions in columns as wide as their content, the intent the rest."""
        table: DataTable[Text | str] = self.query_one(DataTable)
        rows: dict[str, tuple[Cell, ...]] = {}
        for s in self.summaries:
            state = s.state if s.state != "ended" else (s.outcome or "ended")
            rows[s.session_id] = (
                time.strftime("%Y-%m-%d %H:%M", time.localtime(s.created_at)),
                name_cell(s.agent.name),
                str(s.steps),
                fmt_reward(s.latest_reward),
                Text(state, "dim" if s.state == "ended" else "green"),
                plain(s.intent),
            )
        widths = fit(COLUMNS, rows.values(), FLEX, room(table))
        keep = table.cursor_row
        table.clear(columns=True)
        for name in COLUMNS:
            table.add_column(name, key=name, width=widths[name])
        for key, cells in rows.items():
            table.add_row(*shown(COLUMNS, cells, FLEX, widths), key=key)
        if 0 <= keep < table.row_count:
            table.move_cursor(row=keep)

    def action_reload(self) -> None:
        self.fetch()

    @work(exclusive=True, group="history")
    async def fetch(self) -> None:
        try:
            self.summaries = await self.load()
        except WebShepherdError as exc:
            message = f"cannot list sessions: {terminal_safe(exc.message)}"
            self.notify(message, severity="error", markup=False)
            return
        self._show()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.post_message(ReplayRequested(str(event.row_key.value)))

    def action_report(self) -> None:
        table = self.query_one(DataTable)
        if not self.summaries or table.cursor_row < 0:
            self.notify("no session selected", severity="warning")
            return
        self.write_report(self.summaries[table.cursor_row].session_id)

    @work(exclusive=True, group="report")
    async def write_report(self, session_id: str) -> None:
        out = (self.report_dir or Path.cwd()) / f"webshepherd-{session_id}.html"
        try:
            path = await write_report(session_id, out, self.data_dir)
        except WebShepherdError as exc:
            self.notify(f"report: {terminal_safe(exc.message)}", severity="error", markup=False)
            return
        self.last_report = path
        self.notify(f"report written: {terminal_safe(str(path))}", timeout=8, markup=False)


async def write_report(session_id: str, out: Path, data_dir: Path | None = None) -> Path:
    """Write ``session_id``'s HTML report to ``out`` by running ``webshepherd report`` (the
    TUI imports only the protocol, the client and itself; the import contracts check it)."""
    argv = [sys.executable, "-m", "webshepherd.daemon.cli", "report", session_id, "--out", str(out)]
    if data_dir is not None:
        argv += ["--data-dir", str(data_dir)]
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate()
    if proc.returncode != 0:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        raise WebShepherdError(lines[-1] if lines else f"exited with {proc.returncode}")
    return out
