"""Pending approval requests of every session: action, reward, reason, feedback."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static
from webshepherd.protocol.steps import step_number
from webshepherd.tui.plain import plain
from webshepherd.tui.state import ApprovalView, MonitorState
from webshepherd.tui.widgets.fit import Cell, fit, name_cell, room, shown
from webshepherd.tui.widgets.session_detail import fmt_reward

COLUMNS = ("session", "step", "reward", "reason", "action")
FLEX = "action"  # the rest of the width (tui/widgets/fit.py)


class ApprovalsPanel(Vertical):
    """A table of pending requests and the highlighted one's thought and feedback."""

    DEFAULT_CSS = """
    ApprovalsPanel { height: 1fr; }
    ApprovalsPanel > DataTable { height: 1fr; min-height: 4; }
    ApprovalsPanel > #approval-detail { height: auto; max-height: 50%; padding: 0 1; }
    ApprovalsPanel > #approval-keys { height: 1; color: $text-muted; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._version = -1
        self._pending: dict[str, ApprovalView] = {}
        self._state: MonitorState | None = None
        self.widths: dict[str, int] = {}

    def compose(self) -> ComposeResult:
        table: DataTable[str | Text] = DataTable(cursor_type="row", id="approvals")
        self.widths = fit(COLUMNS, [], FLEX, room(table))
        for name in COLUMNS:  # now: a sync may come before mount
            table.add_column(name, key=name, width=self.widths[name])
        yield table
        yield Static("", id="approval-detail")
        yield Static("a approve · r reject · e edit the action", id="approval-keys")

    @property
    def ready(self) -> bool:
        """Composed and mounted, children included."""
        return (
            self.is_mounted and len(self.children) == 3 and all(c.is_mounted for c in self.children)
        )

    @property
    def table(self) -> DataTable[str | Text]:
        return self.query_one(DataTable)

    @property
    def selected(self) -> ApprovalView | None:
        table = self.table
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self._pending.get(str(key))

    def sync(self, state: MonitorState) -> None:
        if state.approvals_version == self._version and self.table.row_count == len(
            state.approvals
        ):
            return
        self._version = state.approvals_version
        self._state = state
        table = self.table
        keep = self.selected
        self._pending = {a.request_id: a for a in state.pending()}
        rows: dict[str, tuple[Cell, ...]] = {}
        for a in self._pending.values():
            view = state.sessions.get(a.session_id)
            who = name_cell(view.agent if view else a.session_id)
            reward = fmt_reward(a.reward)
            rows[a.request_id] = (
                who,
                str(step_number(a.step)),
                reward,
                plain(a.reason),
                plain(a.action),
            )
        widths = fit(COLUMNS, rows.values(), FLEX, room(table))
        table.clear(columns=widths != self.widths)
        if not table.columns:
            self.widths = widths
            for name in COLUMNS:
                table.add_column(name, key=name, width=widths[name])
        for key, cells in rows.items():
            table.add_row(*shown(COLUMNS, cells, FLEX, widths), key=key)
        if keep is not None and keep.request_id in self._pending:
            table.move_cursor(row=table.get_row_index(keep.request_id))
        self.show_selected()

    def on_resize(self) -> None:
        if self._state is not None:
            self._version = -1
            self.sync(self._state)

    def show_selected(self) -> None:
        a = self.selected
        detail = self.query_one("#approval-detail", Static)
        if a is None:
            detail.update(Text("no pending approvals", style="dim"))
            return
        detail.update(
            Text.assemble(
                ("action: ", "bold"),
                plain(a.action, "magenta"),
                ("\nthought: ", "bold"),
                plain(a.thought or "—", multiline=True),
                ("\nfeedback: ", "bold"),
                plain(a.feedback or "—", multiline=True),
            )
        )

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.show_selected()
