"""Judge–person agreement in one line (the Approvals tab): a person's decisions seen by this
monitor against the judge's rewards (protocol/agreement.py)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static
from webshepherd.tui.state import MonitorState


class AgreementLine(Static):
    """How often the person approved the judge's top pick, rejected a high reward and
    approved a low one, with counts; redrawn only when a decision is folded."""

    DEFAULT_CSS = """
    AgreementLine { height: auto; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("", id=id, classes=classes)
        self._version = -1
        self.text = ""

    def sync(self, state: MonitorState) -> None:
        if state.decisions_version == self._version:
            return
        self._version = state.decisions_version
        self.text = state.agreement().line()
        self.update(Text(self.text))
