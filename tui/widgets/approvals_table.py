"""Pending approval requests of every session, and the highlighted one's card: what the action
targets (role, name, bid), where it leads, what it types, why it waits, the candidate's thought
and the judge's feedback, the other candidates, and the target cut out of the screenshot. A
paused request's card reads in the task's words first: what was clicked, what it sends (as the
page labels it, and the page's amounts), why it waits, the judge's view, the time left and what
each answer does; then exactly what would be sent."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static
from webshepherd.protocol.steps import step_number
from webshepherd.tui.plain import plain
from webshepherd.tui.state import ApprovalView, MonitorState
from webshepherd.tui.widgets.fit import Cell, fit, name_cell, room, shown
from webshepherd.tui.widgets.session_detail import fmt_reward
from webshepherd.tui.widgets.target_crop import target_crop

COLUMNS = ("session", "step", "reward", "reason", "action")
FLEX = "action"  # the rest of the width (tui/widgets/fit.py)
LABEL_W = 10  # the card's field names
FIELDS_SHOWN, FIELD_CHARS = 8, 60  # a paused request's fields: how many, each cut to this
KEYS = "a approve · r reject · e edit the action"
#: the decide line of a paused request: fits 80 columns (with the panel's padding)
COMMIT_KEYS = "a approve · r reject · sent as shown or not at all (no edit)"
CROP_COLS, CROP_ROWS = 72, 10  # the most the target's cut-out takes


def why_it_waits(a: ApprovalView) -> list[Text]:
    """Why the step waits for a person: the reward policy's reason, then each guard rule the
    action met (held whatever its reward)."""
    r = "—" if a.reward is None else f"{a.reward:.3f}"
    if a.reason == "below_threshold":
        limit = "" if a.threshold is None else f" {a.threshold:.2f}"
        lines = [Text(f"reward {r} is below the threshold{limit}")]
    elif a.reason == "reward_drop":
        lines = [Text(f"reward {r} dropped from the previous step's")]
    elif a.reason == "always":
        lines = [Text("the agent asks a person at every step")]
    elif a.reason == "guarded":
        lines = [Text(f"a guard holds it whatever the reward ({r})", "bold red")]
    elif a.reason == "commit":
        why = a.card.why if a.card is not None else None
        if why:
            lines = [plain(why, "bold red", multiline=True)]
        else:
            lines = [Text("the browser paused a request that commits, before it left", "bold red")]
    else:
        lines = [plain(a.reason)]
    for hit in a.guard:
        lines.append(Text.assemble(("⚠ ", "bold red"), (hit.rule, "bold"), ": ", plain(hit.detail)))
    return lines


def indented(text: str) -> Text:
    """Untrusted text of several lines, its later lines under the first (past the labels)."""
    return Text("\n" + " " * LABEL_W).join(plain(text, multiline=True).split("\n"))


def cut(text: str, most: int) -> str:
    """``text`` cut to ``most`` characters, an ellipsis marking the cut."""
    return text if len(text) <= most else text[: most - 1] + "…"


def card_text(a: ApprovalView, intent: str | None, now: float | None = None) -> Text:
    """The card's text: every string from a page, agent or model through :func:`plain`."""
    out = Text()

    def field(name: str, *value: Text | str) -> None:
        if out:
            out.append("\n")
        out.append(f"{name:<{LABEL_W}}", "bold")
        out.append_text(Text.assemble(*value))

    card = a.card
    if card is not None and card.request is not None:
        return request_text(a, intent, now)
    field("action", plain(a.action, "magenta"))
    target = card.target if card else None
    if target is not None:
        said: list[Text | str] = [plain(target.role or "element", "cyan")]
        if target.name:
            said += [" '", plain(target.name, "bold"), "'"]
        if target.role is None:
            said.append(Text(" (not in the page's AX tree)", "yellow"))
        field("target", *said, plain(f" [{target.bid}]", "dim"))
    if card is not None and card.destination:
        field("leads to", plain(card.destination, "underline"))
    if card is not None and card.typed is not None:
        field("types", "'", plain(card.typed, "bold"), "'")
    for i, line in enumerate(why_it_waits(a)):
        field("waits" if i == 0 else "", line)
    thought = card.thought if card is not None else a.thought
    field("thought", indented(thought or "—"))
    feedback = card.feedback if card is not None else a.feedback
    field("feedback", indented(feedback or "—"))
    for i, o in enumerate(card.others if card else []):
        field("others" if i == 0 else "", f"#{o.index} {fmt_reward(o.reward)}  ", plain(o.action))
    if intent:
        field("task", indented(intent))
    return out


def time_left(expires_at: float | None, now: float) -> Text | None:
    """How long until an unanswered request is refused (``m:ss``), and when."""
    if expires_at is None:
        return None
    left = expires_at - now
    at = time.strftime("%H:%M:%S", time.localtime(expires_at))
    if left <= 0:
        return Text(f"none: refused at {at} unless answered now", "bold red")
    minutes, seconds = divmod(int(left), 60)
    return Text.assemble((f"{minutes}:{seconds:02d}", "bold"), f" (until {at}; then refused)")


def request_text(a: ApprovalView, intent: str | None, now: float | None = None) -> Text:
    """A paused request's card (reason 'commit'): the daemon's headline in plain words, what
    was clicked, what it sends as the page labels it and the page's amounts near it, why it
    waits, the judge's view, the time left (at ``now``) and what each answer does; then exactly
    what would be sent, as the browser would send it (the host as punycode, fields escaped and
    cut), where it is sent from and which action caused it."""
    card = a.card
    assert card is not None and card.request is not None
    r = card.request
    out = Text()
    headline = card.headline or f"Waiting for you: this sends a {r.method} request"
    out.append_text(plain(headline, "bold yellow", multiline=True))

    def field(name: str, *value: Text | str) -> None:
        out.append(f"\n{name:<{LABEL_W}}", "bold")
        out.append_text(Text.assemble(*value))

    t = card.target
    if t is not None:
        said: list[Text | str] = [plain(t.role or "element", "cyan")]
        if t.name:
            said += [" '", plain(t.name, "bold"), "'"]
        field("clicked", *said, plain(f" [{t.bid}]", "dim"))
    labels = {f.name: f.label for f in card.labels}
    for i, f in enumerate(r.fields[:FIELDS_SHOWN]):
        label = labels.get(f.name)
        name = (
            Text.assemble(plain(cut(label, 32), "bold"), plain(f" ({cut(f.name, 24)})", "dim"))
            if label
            else plain(cut(f.name, 32), "cyan")
        )
        field("sends" if i == 0 else "", name, " = ", plain(cut(f.value, FIELD_CHARS)))
    if len(r.fields) > FIELDS_SHOWN:
        field("", Text(f"… {len(r.fields) - FIELDS_SHOWN} more", "dim"))
    if not r.fields and r.body_bytes:
        field("sends", f"{r.body_bytes} bytes (no fields read)")
    for i, amount in enumerate(card.amounts):
        field("page says" if i == 0 else "", plain(amount, "bold"))
    for i, line in enumerate(why_it_waits(a)):
        field("waits" if i == 0 else "", line)
    if card.judge is not None:
        j = card.judge
        view: list[Text | str] = [f"reward {fmt_reward(j.reward)} at step {step_number(j.step)}"]
        if j.item is not None:
            view += [f" · serves item {j.item}", ": " if j.item_title else ""]
            view.append(plain(j.item_title or "", "italic"))
        field("judge", *view)
    left = time_left(card.expires_at, time.time() if now is None else now)
    if left is not None:
        field("time left", left)
    if card.on_approve:
        field("approve", plain(card.on_approve, "green"))
    if card.on_reject:
        field("reject", plain(card.on_reject, "red"))
    field(
        "method",
        plain(r.method, "bold"),
        f"  ({r.kind}{', the page itself' if r.top_level else ''})",
    )
    field("url", plain(r.url, "underline"))
    if r.body_bytes:
        field("body", f"{r.body_bytes} bytes")
    field("origin", plain(r.origin or "—"))
    if r.page_url:
        field("from", plain(r.page_url))
    field(
        "trigger",
        plain(r.trigger, "magenta")
        if r.trigger
        else Text("the page itself (no action of the agent's)", "dim"),
    )
    for i, hit in enumerate(card.predicts):
        field("predicted" if i == 0 else "", plain(hit.rule, "bold"), ": ", plain(hit.detail))
    if intent:
        field("task", indented(intent))
    return out


class ApprovalsPanel(Vertical):
    """A table of pending requests and the highlighted one's thought and feedback."""

    DEFAULT_CSS = """
    ApprovalsPanel { height: 1fr; }
    ApprovalsPanel > DataTable { height: 1fr; min-height: 4; }
    ApprovalsPanel > #approval-card { height: auto; max-height: 70%; padding: 0 1; }
    ApprovalsPanel #approval-detail, ApprovalsPanel #approval-crop { height: auto; }
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
        with VerticalScroll(id="approval-card"):
            yield Static("", id="approval-detail")
            yield Static("", id="approval-crop")
        yield Static(KEYS, id="approval-keys")

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)  # a paused request's time left counts down

    def _now(self) -> float:
        return self._state.clock() if self._state is not None else time.time()

    def _tick(self) -> None:
        a = self.selected if self.ready else None
        if a is not None and a.card is not None and a.card.expires_at is not None:
            view = self._state.sessions.get(a.session_id) if self._state else None
            detail = self.query_one("#approval-detail", Static)
            detail.update(card_text(a, view.intent if view else None, self._now()))

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
        crop = self.query_one("#approval-crop", Static)
        if a is None:
            detail.update(Text("no pending approvals", style="dim"))
            self.query_one("#approval-keys", Static).update(KEYS)
            crop.update("")
            crop.display = False
            return
        view = self._state.sessions.get(a.session_id) if self._state else None
        detail.update(card_text(a, view.intent if view else None, self._now()))
        commit = a.card is not None and a.card.request is not None
        self.query_one("#approval-keys", Static).update(COMMIT_KEYS if commit else KEYS)
        shot = a.card.screenshot if a.card else None
        box = a.card.target.box if a.card and a.card.target else None
        picture = None
        if shot is not None and shot.data and box is not None:
            cols = max(min(self.size.width - 4, CROP_COLS), 8)
            picture = target_crop(shot.data, box, cols, CROP_ROWS)
        crop.display = picture is not None
        crop.update(picture if picture is not None else "")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.show_selected()
        self.screen.refresh_bindings()  # the footer's Edit follows the highlighted approval
