"""Asks before a session's mode is loosened (``ask`` → ``watch``, ``stop`` → ``ask``), or one
origin is allowed for the rest of a session from a paused request's card (``A``): one stray
key must not let writes through. Tightening never asks (tui/screens/main.py)."""

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


def origin_question(session: str, origin: str) -> str:
    """The question before allowing ``origin`` for the rest of the session (named as
    :func:`question` names it)."""
    return (
        f"Approve this request and allow {origin} for the rest of {session}?\n"
        f"Its later writes to {origin} run without asking and are only flagged.\n"
        "y approves and allows it · esc keeps asking"
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

    def __init__(
        self, session: str, old: CommitMode | None, new: CommitMode, *, text: str | None = None
    ) -> None:
        super().__init__()
        self.text = text or question(session, old, new)

    @classmethod
    def for_origin(cls, session: str, origin: str, mode: CommitMode | None) -> ConfirmModeScreen:
        """The same confirmation, asking to allow one origin for the rest of the session."""
        return cls(session, mode, "watch", text=origin_question(session, origin))

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(plain(self.text, multiline=True), id="confirm-mode")

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
