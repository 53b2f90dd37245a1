"""Step through one recorded session (``session.get``) with the keys."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import Footer, Static
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.replies import Session
from webshepherd.protocol.steps import step_label
from webshepherd.tui.keys import REPLAY, bindings
from webshepherd.tui.plain import plain
from webshepherd.tui.state import MonitorState, SessionView
from webshepherd.tui.widgets.session_detail import SessionDetail

LoadSession = Callable[[], Awaitable[Session]]


def frame_ends(events: list[dict[str, Any]]) -> list[int]:
    """For each step (protocol/steps.py: an index scored or acted at), how many events a
    replay shows: up to the last event of that step. An index only observed shows with the
    step after it (or, at the end, with the last step)."""
    taken = {
        e["step"]
        for e in events
        if e.get("type") in ("scored", "action") and isinstance(e.get("step"), int)
    }
    ends: list[int] = []
    top = -1
    for i, e in enumerate(events):
        step = e.get("step")
        if isinstance(step, int) and step > top:
            if top in taken:
                ends.append(i)
            top = step
    if ends and top not in taken:
        ends[-1] = len(events)
    else:
        ends.append(len(events))
    return ends


def first_bad_text(reply: Session) -> Text:
    """The whole session's first bad steps: the one replays proved (``webshepherd blame``'s
    ``proven_bad_step`` signal), if any, then the judge's guesses with its feedback."""
    state = MonitorState()
    if reply.checklist is not None:
        state.fold(reply.checklist)
    for event in reply.events:
        state.fold_raw(event)
    view = state.sessions.get(reply.session.session_id)
    if view is None:
        return Text("")
    bad = view.first_bad_steps()
    out = Text(no_wrap=True, overflow="ellipsis")
    proven = next((g for g in view.signals if g.kind == "proven_bad_step"), None)
    if proven is not None and proven.step is not None:
        out.append("first bad step (proven by replays): ", "bold")
        out.append(f"{step_label(proven.step)}: ", "bold red")
        out.append_text(plain(proven.message[:200]))
    for label, step in (("progress", bad.progress), ("reward", bad.reward)):
        if out:
            out.append("\n")
        judge = "judge's guess, " if proven is not None else ""
        out.append(f"first bad step ({judge}{label}): ", "bold")
        if step is None:
            out.append("none", "dim")
            continue
        out.append(f"{step_label(step.step)}: ", "bold red")
        out.append_text(plain(step.detail))
        out.append("  feedback: ", "dim")
        out.append_text(plain(step.feedback[:200]))
    return out


class ReplayScreen(Screen[None]):
    DEFAULT_CSS = """
    ReplayScreen > #replay-title { height: 1; padding: 0 1; background: $boost; }
    ReplayScreen > #replay-bad {
        height: auto; max-height: 3; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis;
    }
    ReplayScreen > SessionDetail { padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = bindings(REPLAY)

    def __init__(self, reply: Session | None = None, load: LoadSession | None = None) -> None:
        super().__init__()
        self.reply = reply
        self.load = load
        self.ends: list[int] = []
        self.frame = 0
        self.view: SessionView | None = None

    def compose(self) -> ComposeResult:
        yield Static("loading …", id="replay-title")
        yield Static("", id="replay-bad")
        yield SessionDetail(id="replay-detail")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        if self.reply is not None:
            self._loaded(self.reply)
        elif self.load is not None:
            self.fetch()

    @work(exclusive=True, group="replay")
    async def fetch(self) -> None:
        assert self.load is not None
        try:
            reply = await self.load()
        except WebShepherdError as exc:
            self.query_one("#replay-title", Static).update(plain(f"cannot load: {exc.message}"))
            return
        self._loaded(reply)

    def _loaded(self, reply: Session) -> None:
        self.reply = reply
        self.ends = frame_ends(reply.events)
        self.frame = 0
        self.query_one("#replay-bad", Static).update(first_bad_text(reply))
        self._draw()

    def _draw(self) -> None:
        reply = self.reply
        if reply is None:
            return
        state = MonitorState()
        if reply.checklist is not None:
            state.fold(reply.checklist)
        for event in reply.events[: self.ends[self.frame]]:
            state.fold_raw(event)
        sid = reply.session.session_id
        self.view = state.sessions.get(sid)
        if self.view is not None and self.frame == len(self.ends) - 1:
            self.view.state, self.view.outcome = reply.session.state, reply.session.outcome
        cur = self.view.current if self.view else None
        where = step_label(cur.step) if cur else "no step"
        title = Text.assemble(
            (" replay ", "bold reverse"),
            (f" {where} ({self.frame + 1}/{len(self.ends)}) ", "bold"),
            plain(reply.session.intent),
            no_wrap=True,
            overflow="ellipsis",
        )
        self.query_one("#replay-title", Static).update(title)
        self.query_one(SessionDetail).show(self.view, force=True)

    def action_step(self, delta: int) -> None:
        if self.ends:
            self.frame = min(max(self.frame + delta, 0), len(self.ends) - 1)
            self._draw()

    def action_jump(self, where: int) -> None:
        if self.ends:
            self.frame = 0 if where == 0 else len(self.ends) - 1
            self._draw()
