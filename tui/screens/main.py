"""The live screen: sessions with the selected one in detail, approvals, device."""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Container
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane
from webshepherd.protocol.commits import url_origin
from webshepherd.protocol.common import CommitMode, Decision
from webshepherd.protocol.steps import step_label
from webshepherd.protocol.terminal_text import terminal_safe
from webshepherd.tui.device import DeviceReading
from webshepherd.tui.keys import MAIN, bindings
from webshepherd.tui.plain import plain
from webshepherd.tui.screens.edit_action import EditActionScreen
from webshepherd.tui.screens.messages import DecisionMade, ModeRequested, ReplayRequested
from webshepherd.tui.state import MonitorState
from webshepherd.tui.widgets.agreement_line import AgreementLine
from webshepherd.tui.widgets.approvals_table import ApprovalsPanel
from webshepherd.tui.widgets.device_panel import DevicePanel
from webshepherd.tui.widgets.session_detail import SessionDetail
from webshepherd.tui.widgets.sessions_table import SessionsTable

WIDE = 120
#: What ``m`` switches a session's mode to, from each (a session whose mode is not known
#: yet: to 'watch', as from the daemon's default 'ask').
NEXT_MODE: dict[CommitMode | None, CommitMode] = {
    "ask": "watch",
    "watch": "stop",
    "stop": "ask",
    None: "watch",
}
FOCUS_IN = {"tab-sessions": "#sessions", "tab-approvals": "#approvals", "tab-device": "#device"}


class MainScreen(Screen[None]):
    CSS_PATH = "main.tcss"
    BINDINGS: ClassVar[list[BindingType]] = bindings(MAIN)

    def __init__(self, state: MonitorState, table_interval_s: float = 0.5) -> None:
        super().__init__()
        self.state = state
        self.table_interval_s = table_interval_s  # row updates are the costliest redraw
        self._table_synced = (-1, 0.0)
        self.status_text = "not connected"
        self.status_ok = False
        self.device: DeviceReading | None = None
        self.composed = False
        self._paused_shown = False

    def compose(self) -> ComposeResult:
        self.table = SessionsTable(id="sessions")
        self.detail = SessionDetail(id="detail")
        self.approvals = ApprovalsPanel(id="approvals-panel")
        self.agreement = AgreementLine(id="agreement")
        self.device_panel = DevicePanel(id="device")
        self.status_bar = Static(id="status")
        self.composed = True
        yield self.status_bar
        with TabbedContent(initial="tab-sessions"):
            with TabPane("Sessions", id="tab-sessions"), Container(id="sessions-body"):
                yield self.table
                yield self.detail
            with TabPane("Approvals", id="tab-approvals"):
                yield self.approvals
                yield self.agreement
            with TabPane("Device", id="tab-device"):
                yield self.device_panel
        yield Footer()

    @property
    def ready(self) -> bool:
        """Every widget mounted (TabbedContent mounts its panes a little after the screen) and
        still in the app's DOM (not while the app exits and removes them)."""
        if not self.composed:
            return False
        widgets = (self.status_bar, self.table, self.device_panel)
        return (
            self.is_mounted
            and all(w.is_mounted and w.is_attached for w in widgets)
            and self.detail.ready
            and self.approvals.ready
        )

    def on_mount(self) -> None:
        self.table.focus()
        self.sync()
        self.show_device(self.device)

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width >= WIDE, "-wide")

    # ------------------------------------------------------------- attributes down

    def set_status(self, text: str, ok: bool) -> None:
        self.status_text, self.status_ok = text, ok
        self._draw_status()

    def _draw_status(self) -> None:
        if not self.ready:
            return
        n = len(self.state.approvals)
        dot = ("● ", "green") if self.status_ok else ("○ ", "red")
        line = Text.assemble(dot, plain(self.status_text))
        if n:
            plural = "s" if n > 1 else ""
            line.append(f"   ⚠ {n} approval{plural} pending (2)", "bold black on yellow")
        self.status_bar.update(line)

    def sync(self) -> bool:
        """Show the state (cheap when nothing changed: every widget skips unchanged parts);
        False when something is left for a later call (not mounted yet, table throttled)."""
        if not self.ready:
            return False
        table = self.table
        now = time.monotonic()
        version, last = self._table_synced
        done = True
        if version != self.state.version or now - last >= self.table_interval_s:
            table.sync(self.state)  # new sessions at once, changed cells a few times a second
            self._table_synced = (self.state.version, now)
        else:
            done = False
        sid = table.selected
        self.detail.show(self.state.sessions.get(sid) if sid else None)
        self.approvals.sync(self.state)
        paused = self.paused_selected()
        if paused != self._paused_shown:  # the footer's Edit follows the highlighted approval
            self._paused_shown = paused
            self.refresh_bindings()
        if self.agreement.is_mounted:
            self.agreement.sync(self.state)
        n = len(self.state.approvals)
        tab = self.query_one(TabbedContent).get_tab("tab-approvals")
        label = f"Approvals ({n})" if n else "Approvals"
        if str(tab.label) != label:
            tab.label = label
        self._draw_status()
        return done

    def show_device(self, reading: DeviceReading | None) -> None:
        self.device = reading
        if self.ready:
            self.device_panel.show(reading, self.state.stats)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "sessions" and self.ready:
            self.detail.show(self.state.sessions.get(str(event.row_key.value)))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "sessions":
            self.detail.focus()

    def paused_selected(self) -> bool:
        """The highlighted approval is a request the browser paused (approved or rejected as
        it is: no Edit in the footer, and ``e`` does nothing)."""
        pending = self.approvals.selected if self.ready else None
        return pending is not None and pending.card is not None and pending.card.request is not None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (action == "edit" and self.paused_selected())

    # ------------------------------------------------------------- actions (messages up)

    def action_tab(self, tab: str) -> None:
        # focus moves with the tab: focusing a widget inside a pane activates that pane, and
        # a focus left behind in a hidden pane would switch straight back to it
        self.query_one(TabbedContent).active = tab
        self.query_one(f"#{tab} {FOCUS_IN[tab]}").focus()

    def action_decide(self, decision: Decision) -> None:
        pending = self.approvals.selected
        if pending is None:
            self.notify("no pending approval", severity="warning")
            return
        self.post_message(DecisionMade(pending.request_id, decision))

    def action_allow_origin(self) -> None:
        """Approve the highlighted paused request and allow its target origin for the rest of
        its session (the app asks first)."""
        pending = self.approvals.selected
        request = pending.card.request if pending is not None and pending.card else None
        origin = url_origin(request.url) if request is not None else None
        if pending is None or origin is None or origin == "file://":
            self.notify("no paused request with a site to allow is selected", severity="warning")
            return
        self.post_message(DecisionMade(pending.request_id, "approve", allow_origin=origin))

    def action_edit(self) -> None:
        pending = self.approvals.selected
        if pending is None:
            self.notify("no pending approval", severity="warning")
            return
        if pending.card is not None and pending.card.request is not None:
            self.notify(
                "a request the browser paused is approved (a) or rejected (r) as it is; "
                "it cannot be edited",
                severity="warning",
            )
            return

        def done(action: str | None) -> None:
            if action:
                self.post_message(DecisionMade(pending.request_id, "edit", action))

        view = self.state.sessions.get(pending.session_id)
        reward = "—" if pending.reward is None else f"{pending.reward:.3f}"
        context = (
            f"{view.agent if view else pending.session_id} · {step_label(pending.step)} · "
            f"reward {reward} · {pending.reason}\n{pending.feedback}"
        )
        self.app.push_screen(EditActionScreen(terminal_safe(pending.action), context), done)

    def selected_session(self) -> str | None:
        """The session ``m`` and ``o`` act on: the highlighted approval's on the Approvals
        tab, else the sessions table's."""
        if self.query_one(TabbedContent).active == "tab-approvals":
            pending = self.approvals.selected
            if pending is not None:
                return pending.session_id
        return self.table.selected

    def action_mode(self) -> None:
        sid = self.selected_session()
        view = self.state.sessions.get(sid) if sid else None
        if sid is None or view is None:
            self.notify("no session selected", severity="warning")
            return
        if view.state == "ended":
            self.notify("the session has ended: its mode no longer matters", severity="warning")
            return
        self.post_message(ModeRequested(sid, NEXT_MODE[view.mode]))

    def action_replay(self) -> None:
        sid = self.table.selected
        if sid is None:
            self.notify("no session selected", severity="warning")
            return
        self.post_message(ReplayRequested(sid))
