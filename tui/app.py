"""``webshepherd tui``: the live monitor of a webshepherd daemon."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import App
from textual.binding import BindingType
from webshepherd.protocol.common import CommitMode, Decision
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.modes import loosens
from webshepherd.protocol.terminal_text import terminal_safe
from webshepherd.protocol.version import DEFAULT_URL
from webshepherd.tui.device import DeviceProbe, DeviceReading
from webshepherd.tui.keys import APP, bindings
from webshepherd.tui.link import DaemonLink
from webshepherd.tui.screens.confirm_mode import ConfirmModeScreen
from webshepherd.tui.screens.help import HelpScreen
from webshepherd.tui.screens.history import HistoryScreen
from webshepherd.tui.screens.main import MainScreen
from webshepherd.tui.screens.messages import DecisionMade, ModeRequested, ReplayRequested
from webshepherd.tui.screens.replay import ReplayScreen
from webshepherd.tui.state import MonitorState


class WebShepherdApp(App[None]):
    """Folds the daemon's events into :class:`MonitorState` (in a worker) and redraws the
    screen from it at most ``refresh_s`` apart. ``connect=False`` shows a given state only."""

    TITLE = "webshepherd"
    ENABLE_COMMAND_PALETTE = False
    CSS_PATH = "app.tcss"
    BINDINGS: ClassVar[list[BindingType]] = bindings(APP)

    def __init__(
        self,
        url: str = DEFAULT_URL,
        token: str | None = None,
        *,
        connect: bool = True,
        state: MonitorState | None = None,
        probe: DeviceProbe | None = None,
        refresh_s: float = 0.1,
        backoff_max_s: float = 2.0,
        data_dir: Path | None = None,
        report_dir: Path | None = None,
        approver: str | None = None,
        credential: Callable[[], str | None] | None = None,
    ) -> None:
        """``approver``: the credential to start with; ``credential``: reads it again (its
        file), so a pairing made while the TUI runs is taken up."""
        super().__init__()
        self.data_dir = data_dir
        self.report_dir = report_dir
        self.state = state or MonitorState()
        self.connect = connect
        self.probe = probe if probe is not None else DeviceProbe()
        self.refresh_s = refresh_s
        self.dirty = True
        self.device: DeviceReading | None = None
        self.link = DaemonLink(
            self.state,
            url,
            token,
            on_change=self.mark_dirty,
            on_status=self.set_status,
            backoff_max_s=backoff_max_s,
            approver=approver,
            credential=credential,
        )
        self.main = MainScreen(self.state)

    def on_mount(self) -> None:
        self.push_screen(self.main)
        self.read_device()
        self.set_interval(self.refresh_s, self.flush)
        self.set_interval(2.0, self.read_device)
        if self.connect:
            self.main.set_status(f"connecting to {self.link.url} …", False)
            self.run_link()
        else:
            self.main.set_status("offline: showing recorded events", False)

    @work(exclusive=True, group="link")
    async def run_link(self) -> None:
        await self.link.run()

    def mark_dirty(self) -> None:
        self.dirty = True

    def set_status(self, text: str, ok: bool) -> None:
        self.main.set_status(text, ok)

    def flush(self) -> None:
        """Push the state down to the main screen when events arrived since the last flush."""
        if self.dirty:
            self.dirty = not self.main.sync()
            self.main.show_device(self.device)

    def read_device(self) -> None:
        self.device = self.probe.read()
        self.main.show_device(self.device)

    async def on_decision_made(self, message: DecisionMade) -> None:
        origin = message.allow_origin
        if origin is None:
            self.send_decision(message.request_id, message.decision, message.action)
            return
        if self.unpaired("allow a site"):
            return
        pending = self.state.approvals.get(message.request_id)
        sid = pending.session_id if pending is not None else ""
        view = self.state.sessions.get(sid)
        name = f"{view.agent} ({sid})" if view is not None and view.agent else sid

        def done(yes: bool | None) -> None:
            if yes:
                self.send_decision(message.request_id, "approve", None, allow_origin=True)

        mode = view.mode if view is not None else None
        self.push_screen(ConfirmModeScreen.for_origin(name, origin, mode), done)

    def unpaired(self, what: str) -> bool:
        """Say so and return True when this TUI is not paired (it decides nothing)."""
        if self.link.paired:
            return False
        self.notify(
            f"{what}: this TUI is not paired, so it decides nothing; a person runs "
            "`webshepherd pair tui` at a terminal (this TUI takes the pairing up at once)",
            severity="error",
            markup=False,
        )
        return True

    @work(group="decide")
    async def send_decision(
        self,
        request_id: str,
        decision: Decision,
        action: str | None,
        *,
        allow_origin: bool = False,
    ) -> None:
        if self.unpaired(decision):
            return
        try:
            await self.link.decide(request_id, decision, action, allow_origin=allow_origin)
        except WebShepherdError as exc:
            self.notify(
                f"{decision} failed: {terminal_safe(exc.message)}", severity="error", markup=False
            )
            return
        self.notify(f"{decision}: sent", timeout=2)

    async def on_mode_requested(self, message: ModeRequested) -> None:
        sid, mode = message.session_id, message.mode
        if self.unpaired(f"mode {mode}"):
            return
        view = self.state.sessions.get(sid)
        old = view.mode if view is not None else None
        if not loosens(old, mode):  # tightening never asks
            self.send_mode(sid, mode)
            return

        def done(yes: bool | None) -> None:
            if yes:
                self.send_mode(sid, mode)

        name = f"{view.agent} ({sid})" if view is not None and view.agent else sid
        self.push_screen(ConfirmModeScreen(name, old, mode), done)

    @work(group="decide")
    async def send_mode(self, session_id: str, mode: CommitMode) -> None:
        if self.unpaired(f"mode {mode}"):
            return
        try:
            now = await self.link.set_mode(session_id, mode)
        except WebShepherdError as exc:
            self.notify(
                f"mode {mode} failed: {terminal_safe(exc.message)}", severity="error", markup=False
            )
            return
        self.notify(self.mode_said(session_id, now), timeout=3, markup=False)

    def mode_said(self, session_id: str, mode: str) -> str:
        """The toast after a mode switch, naming the session (its agent and short id)."""
        view = self.state.sessions.get(session_id)
        agent = f"{view.agent} " if view is not None and view.agent else ""
        return f"{agent}{session_id[:8]}: mode {mode}"

    def on_replay_requested(self, message: ReplayRequested) -> None:
        sid = message.session_id
        self.push_screen(ReplayScreen(load=lambda: self.link.client.session(sid)))

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_history(self) -> None:
        self.push_screen(
            HistoryScreen(
                load=lambda: self.link.client.sessions(200),
                data_dir=self.data_dir,
                report_dir=self.report_dir,
            )
        )
