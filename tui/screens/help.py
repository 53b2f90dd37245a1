"""The keys."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = """\
[b]webshepherd tui — keys[/b]

  ?        this help           q         quit
  1 2 3    Sessions, Approvals, Device tabs
  tab      next pane           h         recorded sessions

[b]sessions[/b]
  ↑ ↓      select a session    enter     focus its detail
  o        replay the selected session

[b]approvals[/b] (on the highlighted request, from any tab)
  a        approve             r         reject
  e        edit the action; enter sends, escape cancels

[b]recorded sessions[/b] (h)
  enter    replay it           r         write its HTML report
  f5       reload              escape    back

[b]replay[/b]
  ← → p n  previous/next step  home end  first/last step
  escape   back

[green]✓[/] yes  [yellow]~[/] in progress  [red]✗[/] no  · not scored
[cyan]━━[/] best candidate's reward  [magenta]━━[/] executed action's
"""


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: auto; max-width: 90%; height: auto; max-height: 90%;
        padding: 1 2; border: thick $accent; background: $surface;
    }
    HelpScreen Static { width: auto; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "close", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(KEYS)

    def action_close(self) -> None:
        self.dismiss(None)
