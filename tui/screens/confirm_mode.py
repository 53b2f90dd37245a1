"""Asks before a session's mode is loosened (``ask`` → ``watch``, ``stop`` → ``ask``): one
stray ``m`` must not let writes through. Tightening never asks (tui/screens/main.py)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label
from webshepherd.protocol.common import CommitMode
from webshepherd.protocol.modes import MODE_DOES
from webshepherd.tui.keys import CONFIRM, bindings
from webshepherd.tui.plain import plain


def question(session: str, old: CommitMode | None, new: CommitMode) -> str:
    """The question, naming the session (its agent and id, shown as plain text)."""
    was = f"'{old}'" if old else "its current mode"
    return (
        f"Loosen {session} from {was} to '{new}'?\n"
        f"In '{new}', {MODE_DOES[new]}.\n"
        "y switches it · esc keeps the mode"
    )


class ConfirmModeScreen(ModalScreen[bool]):
    DEFAULT_CSS = """
    ConfirmModeScreen { align: center middle; }
    ConfirmModeScreen > Vertical {
        width: 90%; max-width: 90; height: auto; padding: 1 2;
        border: thick $warning; background: $surface;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = bindings(CONFIRM)

    def __init__(self, session: str, old: CommitMode | None, new: CommitMode) -> None:
        super().__init__()
        self.text = question(session, old, new)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(plain(self.text, multiline=True), id="confirm-mode")

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
