"""A modal input for replacing the action of an approval request."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label
from webshepherd.tui.keys import EDIT, bindings
from webshepherd.tui.plain import plain


class EditActionScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    EditActionScreen { align: center middle; }
    EditActionScreen > Vertical {
        width: 80%; max-width: 100; height: auto; padding: 1 2;
        border: thick $warning; background: $surface;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = bindings(EDIT)

    def __init__(self, action: str, context: str = "") -> None:
        super().__init__()
        self.action_text = action
        self.context = context

    def compose(self) -> ComposeResult:
        with Vertical():
            if self.context:
                yield Label(plain(self.context, multiline=True), id="edit-context")
            yield Label("Edit the action (enter sends it, escape cancels):")
            yield Input(self.action_text, id="edit-action")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
