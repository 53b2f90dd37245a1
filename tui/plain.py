"""Untrusted strings as plain Rich text: never parsed as markup, controls shown as escapes.

Every intent, agent name, action, thought, feedback, checklist title, URL and error message the
monitor shows came from a page, an agent or a model; it reaches a widget only through
:func:`plain` (a :class:`rich.text.Text`, which Textual never reads as markup).
"""

from __future__ import annotations

from rich.text import Text
from webshepherd.protocol.terminal_text import terminal_safe


def plain(text: str, style: str = "", *, multiline: bool = False) -> Text:
    """``text`` as literal :class:`Text` with ``style``, terminal controls made visible."""
    return Text(terminal_safe(text, multiline=multiline), style)


def counted(n: int, word: str, many: str | None = None) -> str:
    """``"1 step"``, ``"2 steps"``: ``n`` and ``word``, plural (``many``, else ``word`` + s)
    unless ``n`` is 1."""
    return f"{n} {word if n == 1 else many or word + 's'}"
