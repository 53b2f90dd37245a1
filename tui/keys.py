"""Every key of the monitor, once: the bindings each screen installs, the footer's names for
them and the help screen's lines all come from these tables. A key means one thing on every
screen (tests/tui/test_keys.py checks it)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding, BindingType


@dataclass(frozen=True)
class Key:
    """``keys``: Textual's key names, comma-separated; ``shown``: how the footer and the help
    name them; ``label``: the footer's word; ``help``: the help screen's line."""

    keys: str
    action: str
    shown: str
    label: str
    help: str
    footer: bool = True
    priority: bool = False  # before the focused widget's own use of the key (a scroll's home)

    def binding(self) -> Binding:
        return Binding(
            self.keys,
            self.action,
            self.label,
            show=self.footer,
            key_display=self.shown,
            priority=self.priority,
        )


@dataclass(frozen=True)
class Note:
    """A key that a widget handles itself (a table's enter, tab between panes): in the help
    only."""

    shown: str
    help: str


def bindings(keys: tuple[Key, ...]) -> list[BindingType]:
    return [k.binding() for k in keys]


APP = (
    Key("question_mark", "help", "?", "Help", "this help"),
    Key("q,ctrl+q", "quit", "q", "Quit", "quit"),
    Key("h", "history", "h", "History", "recorded sessions"),
)

MAIN = (
    Key("1", "tab('tab-sessions')", "1", "Sessions", "Sessions tab", footer=False),
    Key("2", "tab('tab-approvals')", "2", "Approvals", "Approvals tab", footer=False),
    Key("3", "tab('tab-device')", "3", "Device", "Device tab", footer=False),
    Key("a", "decide('approve')", "a", "Approve", "approve the request"),
    Key("r", "decide('reject')", "r", "Reject", "reject it"),
    Key("e", "edit", "e", "Edit", "edit its action"),
    Key(
        "A",
        "allow_origin",
        "A",
        "Allow site",
        "approve a paused request and allow its site for the session",
        footer=False,
    ),
    Key("o", "replay", "o", "Replay", "replay the selected session"),
    Key("m", "mode", "m", "Mode", "switch its mode: ask, watch, stop"),
)

EDIT = (Key("escape", "cancel", "esc", "Cancel", "cancel (enter sends the action)"),)

CONFIRM = (
    Key("y", "confirm", "y", "Yes", "loosen it (a looser mode, a site allowed)"),
    Key("escape", "cancel", "esc", "No", "keep it as it is"),
)

HISTORY = (
    Key("escape", "app.pop_screen", "esc", "Back", "back"),
    Key("f5", "reload", "f5", "Reload", "reload"),
    Key("w", "report", "w", "Write report", "write its HTML report"),
)

REPLAY = (
    Key("left,p", "step(-1)", "← p", "Prev", "previous step", priority=True),
    Key("right,n", "step(1)", "→ n", "Next", "next step", priority=True),
    Key("home,g", "jump(0)", "home g", "First", "first step", priority=True),
    Key("end,G", "jump(-1)", "end G", "Last", "last step", priority=True),
    Key("escape", "app.pop_screen", "esc", "Back", "back"),
)

HELP = (Key("escape,question_mark,q", "close", "esc", "Close", "close"),)

#: The help screen: a title and its entries, per screen.
SECTIONS: tuple[tuple[str, tuple[Key | Note, ...]], ...] = (
    ("everywhere", APP),
    (
        "live sessions",
        (
            Note("tab", "next pane"),
            Note("↑ ↓", "select a session"),
            Note("enter", "its detail"),
            *MAIN,
        ),
    ),
    ("editing an action (e)", EDIT),
    ("a looser mode (m) or a site allowed (A)", CONFIRM),
    ("recorded sessions (h)", (Note("enter", "replay it"), *HISTORY)),
    ("replay (o, or enter in h)", REPLAY),
)
