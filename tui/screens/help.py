"""The keys: every screen's, as its footer names them (tui/keys.py)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static
from webshepherd.tui.keys import HELP, SECTIONS, Key, Note, bindings

LEGEND = Text.from_markup(
    "[green]✓[/] yes  [yellow]~[/] in progress  [red]✗[/] no  · not scored\n"
    "[cyan]━━[/] best candidate's reward  [magenta]━━[/] executed action's"
)
KEY_W, HELP_W, LINE_W = 7, 22, 64


def entry(e: Key | Note, width: int = 0) -> str:
    return f"{e.shown:<{KEY_W}} {e.help:<{width}}"


def keys_text() -> Text:
    """Each screen's keys as its footer names them (tui/keys.py), two to a line where they
    fit."""
    out = Text("webshepherd tui — keys\n", "bold")
    for title, entries in SECTIONS:
        out.append(f"\n{title}\n", "bold")
        rest = list(entries)
        while rest:
            a = rest.pop(0)
            pair = f"  {entry(a, HELP_W)}  {entry(rest[0])}" if rest else ""
            if rest and len(a.help) <= HELP_W and len(pair) <= LINE_W:
                out.append(pair + "\n")
                rest.pop(0)
            else:
                out.append(f"  {entry(a)}\n")
    return out.append("\n").append_text(LEGEND)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: auto; max-width: 90%; height: auto; max-height: 90%;
        padding: 1 2; border: thick $accent; background: $surface;
    }
    HelpScreen Static { width: auto; }
    """
    BINDINGS: ClassVar[list[BindingType]] = bindings(HELP)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(keys_text())

    def action_close(self) -> None:
        self.dismiss(None)
