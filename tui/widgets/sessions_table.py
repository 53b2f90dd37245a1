"""The sessions list: agent, intent, steps, latest reward, state; newest first."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable
from webshepherd.tui.plain import plain
from webshepherd.tui.state import MonitorState, SessionView
from webshepherd.tui.widgets.session_detail import fmt_reward

STATE_STYLE = {"running": "green", "waiting_approval": "bold yellow", "ended": "dim"}


def row_of(v: SessionView, intent_w: int) -> tuple[Text | str, ...]:
    state = Text(v.state_label, STATE_STYLE.get(v.state, ""))
    if v.signals and v.state != "ended":
        state = Text("⚠ " + v.state_label, "bold red")
    return (
        plain(v.agent[:10]),
        plain(v.intent[:intent_w]),
        str(v.step_count),
        fmt_reward(v.latest_reward),
        state,
    )


class SessionsTable(DataTable[Text | str]):
    """Rows keyed by session id; :meth:`sync` updates only the rows whose session changed."""

    DEFAULT_CSS = """
    SessionsTable { height: 1fr; }
    """

    COLUMNS = (("agent", 10), ("intent", 22), ("steps", 5), ("reward", 6), ("state", 20))

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=True)
        self._order_version = -1
        self._seen: dict[str, int] = {}
        self._rows: dict[str, tuple[Text | str, ...]] = {}
        self._intent_w = 22
        for name, width in self.COLUMNS:  # now, not on mount: a sync may come first
            self.add_column(name, key=name, width=width)

    @property
    def selected(self) -> str | None:
        if not self.row_count:
            return None
        try:
            return str(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value)
        except Exception:
            return None

    def sync(self, state: MonitorState) -> None:
        if (
            state.version != self._order_version
            or len(self._seen) != len(state.sessions)
            or self.row_count != len(state.sessions)  # rows added before mount can be lost
        ):
            self._rebuild(state)
            return
        for sid, view in state.sessions.items():
            if self._seen.get(sid) != view.version:
                self._seen[sid] = view.version
                cells = row_of(view, self._intent_w)
                old = self._rows.get(sid, ())
                for i, ((name, _), value) in enumerate(zip(self.COLUMNS, cells, strict=True)):
                    if i >= len(old) or old[i] != value:
                        self.update_cell(sid, name, value)
                self._rows[sid] = cells

    def _rebuild(self, state: MonitorState) -> None:
        keep = self.selected
        self.clear()
        self._order_version = state.version
        self._seen = {}
        self._rows = {}
        for view in state.ordered():
            cells = row_of(view, self._intent_w)
            self.add_row(*cells, key=view.session_id)
            self._seen[view.session_id] = view.version
            self._rows[view.session_id] = cells
        if keep is not None and keep in state.sessions:
            self.move_cursor(row=self.get_row_index(keep))
