"""One session in detail: reward curve, checklist over time, candidates, feedback, action."""

from __future__ import annotations

import textwrap
import time

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static
from webshepherd.protocol.modes import MODE_NAMES, mode_name
from webshepherd.protocol.steps import step_label, step_number
from webshepherd.protocol.terminal_text import terminal_safe
from webshepherd.tui.plain import counted, plain
from webshepherd.tui.state import LABEL_MARK, CommitView, SessionView, StepView
from webshepherd.tui.widgets.fit import name_cell
from webshepherd.tui.widgets.reward_plot import RewardPlot
from webshepherd.tui.widgets.search_tree import tree_text

LABEL_STYLE = {"yes": "bold green", "in_progress": "yellow", "no": "red"}


def fmt_reward(r: float | None) -> str:
    return "  —  " if r is None else f"{r:.3f}"


def checklist_text(view: SessionView, width: int) -> Text:
    """Each checklist item's label per step (✓ yes, ~ in progress, ✗ no, · not scored), the
    marks first and the item's whole title after them, wrapped to the width left."""
    steps = view.scored_steps
    room = max(min(len(steps), max(width // 3, 8)), 1)
    shown = steps[-room:]
    out = Text()
    if not view.checklist:
        out.append("no checklist yet", "dim")
        return out
    span = (
        f"steps {step_number(shown[0].step)}–{step_number(shown[-1].step)}"
        if shown
        else "no steps scored"
    )
    out.append(f"checklist · {span}", "bold")
    title_w = max(width - 4 - room - 1, 10)
    for index, title in view.checklist:
        out.append("\n")
        out.append(f"{index:>2}. ")
        for s in shown:
            label = s.items.get(index)
            if label is None:
                out.append("·", "dim")
            else:
                out.append(LABEL_MARK[label], LABEL_STYLE[label])
        out.append(" " * (room - len(shown) + 1))
        lines = textwrap.wrap(terminal_safe(title), title_w) or [""]
        out.append(lines[0])
        for more in lines[1:]:
            out.append("\n" + " " * (4 + room + 1) + more)
    return out


def decision_words(step: StepView) -> str:
    """The step's decision, and who made it when the daemon said (never "person" unless a
    person decided: the daemon's ``decider``)."""
    d = step.decided
    if d is None or d.decider is None or d.status == "auto":
        return step.decision or "?"
    return f"{d.status} by {d.decider}"


def refusal_text(step: StepView | None) -> Text:
    """A refused step's reason and way out, as the daemon gave them."""
    d = step.decided if step is not None else None
    if d is None or d.status != "rejected" or not (d.note or d.way_out):
        return Text()
    out = Text.assemble((f"✗ refused by {d.decider or d.by or 'the daemon'}", "bold red"))
    if d.note:
        out.append(": ")
        out.append_text(plain(d.note))
    if d.way_out:
        out.append("\n  way out: ", "bold")
        out.append_text(plain(d.way_out))
    out.append("\n")
    return out


def candidates_table(step: StepView | None) -> Table | Text:
    if step is None:
        return Text("no candidates scored yet", style="dim")
    table = Table(
        box=None,
        expand=True,
        padding=(0, 1),
        title=f"{step_label(step.step)} candidates · decision: {decision_words(step)}",
        title_justify="left",
        title_style="bold",
    )
    table.add_column("", width=2, no_wrap=True)
    table.add_column("#", width=2, justify="right")
    table.add_column("reward", width=6, justify="right")
    table.add_column("action", ratio=1, no_wrap=True, overflow="ellipsis")
    for c in step.candidates:
        i = c.result.index
        mark = ("▶" if i == step.chosen else " ") + ("★" if i == step.best else " ")
        style = "bold" if i == step.chosen else ""
        table.add_row(
            mark, str(i), fmt_reward(c.result.reward), plain(c.candidate.action), style=style
        )
    return table


_OUTCOME_MARK = {
    "approved": ("✓ approved ", "bold green"),
    "flagged": ("⚑ flagged ", "bold yellow"),
    "refused": ("✗ refused ", "bold red"),
}


def commit_line(c: CommitView) -> Text:
    """One decided paused request: the time this monitor received it (when known), ✓ approved,
    ⚑ ran flagged, or ✗ refused, who decided and why; a refusal's way out. Every string from
    the request or the daemon's note through :func:`plain` (URLs' hosts as punycode)."""
    r, d = c.request, c.decision
    what = Text.assemble(plain(f"{r.method} ", "bold"), plain(r.url, "underline"))
    who = d.decider or "daemon"
    line = Text()
    if c.at is not None:
        line.append(time.strftime("%H:%M:%S ", time.localtime(c.at)), "dim")
    line.append(*_OUTCOME_MARK[c.outcome])
    line.append_text(what)
    if c.outcome == "flagged":
        where = f" in “{MODE_NAMES['watch']}”" if d.mode == "watch" and who == "mode" else ""
        line.append(f" (ran{where}; decided by {who})")
    else:
        line.append(f" (by {who}")
        if who == "person" and d.by:
            line.append(" ")
            line.append_text(plain(d.by))
        line.append(")")
    if d.note:
        line.append("\n    ")
        line.append_text(plain(d.note, "dim"))
    if d.way_out and c.outcome == "refused":
        line.append("\n    way out: ", "bold")
        line.append_text(plain(d.way_out))
    return line


def activity_text(view: SessionView, step: StepView | None) -> Text:
    out = refusal_text(step)
    if view.commits:
        ended = [c.outcome for c in view.commits]
        counts = ", ".join(f"{ended.count(o)} {o}" for o in ("approved", "flagged", "refused"))
        out.append(f"requests decided: {counts}\n", "bold")
        for c in view.commits[-5:]:
            out.append_text(commit_line(c))
            out.append("\n")
    for g in view.signals[-3:]:
        where = f"{step_label(g.step)}: " if g.step is not None else ""
        out.append(f"⚠ {where}{terminal_safe(g.message)}\n", "bold white on red")
    executed = next(
        (view.steps[k] for k in sorted(view.steps, reverse=True) if view.steps[k].executed), None
    )
    out.append("executed: ", "bold")
    if executed is None:
        out.append("nothing yet\n", "dim")
    else:
        out.append(terminal_safe(executed.executed or ""), "magenta")
        source = terminal_safe(str(executed.executed_source))
        out.append(f"  ({step_label(executed.step)}, {source})\n", "dim")
    if view.progress:
        out.append("feedback (streaming): ", "bold")
        out.append(terminal_safe(view.feedback, multiline=True), "italic")
    elif step is not None and step.candidates:
        ref = step.chosen if step.chosen is not None else step.best
        fb = step.candidates[ref].result.feedback if ref is not None else ""
        out.append("feedback: ", "bold")
        out.append(terminal_safe(fb, multiline=True) or "—")
    return out


class SessionDetail(VerticalScroll):
    """Shows one :class:`SessionView`; call :meth:`show` with the view (attributes down)."""

    DEFAULT_CSS = """
    SessionDetail { height: 1fr; }
    SessionDetail > #title { height: auto; text-style: bold; }
    SessionDetail > Static { height: auto; margin-bottom: 1; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._key: tuple[object, ...] | None = None
        self._steps_key: tuple[object, ...] | None = None
        self.view: SessionView | None = None

    def compose(self) -> ComposeResult:
        yield Static("no session selected", id="title")
        yield RewardPlot(id="plot")
        yield Static(id="checklist")
        yield Static(id="candidates")
        yield Static(id="activity")
        tree = Static(id="tree")  # a tree search's nodes (shown only for one)
        tree.display = False
        yield tree

    @property
    def ready(self) -> bool:
        """Composed and mounted, children included."""
        return (
            self.is_mounted and len(self.children) == 6 and all(c.is_mounted for c in self.children)
        )

    def on_mount(self) -> None:
        self.show(self.view, force=True)

    def show(self, view: SessionView | None, *, force: bool = False) -> None:
        if not self.ready:  # children not mounted yet: show it once they are
            self.view = view
            if self.is_mounted:
                self.call_after_refresh(lambda: self.show(self.view, force=True))
            return
        key = (id(view), view.version if view else None, self.size.width)
        if key == self._key and not force:
            return
        self._key = key
        self.view = view
        title = self.query_one("#title", Static)
        plot = self.query_one(RewardPlot)
        steps_key = (id(view), view.steps_version if view else None, self.size.width)
        steps_changed = force or steps_key != self._steps_key
        self._steps_key = steps_key
        if view is None:
            title.update("no session selected")
            plot.set_series([], [], key=None)
            for name in ("#checklist", "#candidates", "#activity", "#tree"):
                self.query_one(name, Static).update("")
            self.query_one("#tree", Static).display = False
            return
        # the intent in full (wrapped), then the agent, state and step count on a line
        room = max(self.size.width - 2, 10)
        agent = name_cell(view.agent).plain  # as long as the tables show it
        mode = f" · {mode_name(view.mode)}" if view.mode else ""  # "block writes (stop)"
        meta = plain(
            f"{agent} · {view.state_label} · {counted(view.step_count, 'step')}{mode}", "dim"
        )
        meta.truncate(room, overflow="ellipsis")
        head = Text.assemble(plain(view.intent or view.session_id, "bold", multiline=True))
        head.append("\n")
        head.append_text(meta)
        title.update(head)
        cur = view.current
        if steps_changed:  # streaming feedback alone leaves these as they are
            steps = view.scored_steps
            plot.set_series(
                [(step_number(s.step), s.best_reward) for s in steps],
                [(step_number(s.step), s.executed_reward) for s in steps],
                key=(view.session_id, view.steps_version),
            )
            width = max(self.size.width - 2, 20)
            self.query_one("#checklist", Static).update(checklist_text(view, width))
            self.query_one("#candidates", Static).update(candidates_table(cur))
        self.query_one("#activity", Static).update(activity_text(view, cur))
        tree = self.query_one("#tree", Static)
        tree.display = bool(view.tree)
        if view.tree:
            tree.update(tree_text(view, max(self.size.width - 2, 20)))
