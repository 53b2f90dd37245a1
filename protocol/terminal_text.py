"""Untrusted text made safe for a terminal: the one home for it (the CLI and the TUI use it).

Intents, agent names, actions, thoughts, feedback, URLs and error messages come from pages,
agents and models. Printed as they are, an ESC or a C1 control starts a terminal sequence (OSC 52
writes the clipboard, OSC 0 the title, CSI 2J clears the screen) and a bidi override reorders
what the reader sees. :func:`terminal_safe` shows every such character as a visible escape
(``\\x1b``, ``\\u202e``) instead, so the text reads the same and nothing reaches the terminal.
"""

from __future__ import annotations

_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_UNSAFE = (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029, *_BIDI)


def _visible(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_TABLE = {code: _visible(code) for code in _UNSAFE}
_TABLE_MULTILINE = {**_TABLE, ord("\n"): "\n", ord("\t"): "\t"}


_JSON_TABLE = {code: f"\\u{code:04x}" for code in _UNSAFE if code >= 0x7F}


def json_terminal_safe(json_text: str) -> str:
    """JSON text (``ensure_ascii=False``: JSON itself escapes C0 controls) with DEL, C1 and
    bidi-override characters as ``\\uXXXX`` escapes: the same JSON, safe for a terminal."""
    return json_text.translate(_JSON_TABLE)


def terminal_safe(text: str, *, multiline: bool = False) -> str:
    """``text`` with every control, C1 and bidi-override character written as a visible
    escape; ``multiline`` keeps newlines and tabs (elsewhere they are escaped too)."""
    return text.translate(_TABLE_MULTILINE if multiline else _TABLE)
