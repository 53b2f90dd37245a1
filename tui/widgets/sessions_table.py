"""The sessions list: agent, intent, steps, latest reward (a held step's while it waits),
state and mode; newest first; columns as wide as their content (tui/widgets/fit.py)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable
from webshepherd.protocol.modes import MODE_NAMES
from webshepherd.tui.plain import plain
from webshepherd.tui.state import MonitorState, SessionView
from webshepherd.tui.widgets.fit import fit, name_cell, room, shown
from webshepherd.tui.widgets.session_detail import fmt_reward

STATE_STYLE = {"running": "green", "waiting_approval": "bold yellow", "ended": "dim"}
COLUMNS = ("agent", "intent", "steps", "reward", "state")
FLEX = "intent"  # the rest of the width (tui/widgets/fit.py)


def row_of(v: SessionView) -> tuple[Text | str, ...]:
    """A session's cells, the intent uncut."""
    # the mode by what it does (protocol/modes.py: "block writes", not "stop")
    label = v.state_label + (f" · {MODE_NAMES[v.mode]}" if v.mode and v.state != "ended" else "")
    state = Text(label, STATE_STYLE.get(v.state, ""))
    if v.signals and v.state != "ended":
        state = Text("⚠ " + label, "bold red")
    return (
        name_cell(v.agent),
        plain(v.intent),
        str(v.step_count),
        fmt_reward(v.latest_reward),
        state,
    )


class SessionsTable(DataTable[Text | str]):
    """Rows keyed by session id; :meth:`sync` updates only the rows whose session changed.
    Columns as wide as their content, the intent as wide as the rest (rebuilt when that
    changes: a longer agent name, a resize)."""

    DEFAULT_CSS = """
    SessionsTable { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=True)
        self._order_version = -1
        self._seen: dict[str, int] = {}
        self._rows: dict[str, tuple[Text | str, ...]] = {}  # cells as shown (intent cut)
        self._full: dict[str, tuple[Text | str, ...]] = {}  # uncut
        self._state: MonitorState | None = None
        self.widths: dict[str, int] = {}
        self._add_columns(fit(COLUMNS, [], FLEX, room(self)))  # now: a sync may come first

    def _add_columns(self, widths: dict[str, int]) -> None:
        self.widths = widths
        for name in COLUMNS:
            self.add_column(name, key=name, width=widths[name])

    @property
    def selected(self) -> str | None:
        if not self.row_count:
            return None
        try:
            return str(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value)
        except Exception:
            return None

    def on_resize(self) -> None:
        if (
            self._state is not None
            and fit(COLUMNS, self._full.values(), FLEX, room(self)) != self.widths
        ):
            self._rebuild(self._state)

    def sync(self, state: MonitorState) -> None:
        self._state = state
        if (
            state.version != self._order_version
            or len(self._seen) != len(state.sessions)
            or self.row_count != len(state.sessions)  # rows added before mount can be lost
        ):
            self._rebuild(state)
            return
        changed = {
            sid: row_of(view)
            for sid, view in state.sessions.items()
            if self._seen.get(sid) != view.version
        }
        if not changed:
            return
        if fit(COLUMNS, {**self._full, **changed}.values(), FLEX, room(self)) != self.widths:
            self._rebuild(state)
            return
        for sid, full in changed.items():
            self._seen[sid] = state.sessions[sid].version
            self._full[sid] = full
            cells = shown(COLUMNS, full, FLEX, self.widths)
            old = self._rows.get(sid, ())
            for i, (name, value) in enumerate(zip(COLUMNS, cells, strict=True)):
                if i >= len(old) or old[i] != value:
                    self.update_cell(sid, name, value)
            self._rows[sid] = cells

    def _rebuild(self, state: MonitorState) -> None:
        keep = self.selected
        views = state.ordered()
        self._full = {v.session_id: row_of(v) for v in views}
        widths = fit(COLUMNS, self._full.values(), FLEX, room(self))
        self.clear(columns=widths != self.widths)
        if not self.columns:
            self._add_columns(widths)
        self._order_version = state.version
        self._seen = {}
        self._rows = {}
        for view in views:
            cells = shown(COLUMNS, self._full[view.session_id], FLEX, self.widths)
            self.add_row(*cells, key=view.session_id)
            self._seen[view.session_id] = view.version
            self._rows[view.session_id] = cells
        if keep is not None and keep in state.sessions:
            self.move_cursor(row=self.get_row_index(keep))
