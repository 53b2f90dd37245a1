"""Keeping secrets out of what leaves the daemon (exports, reports, OpenTelemetry traces):
password values always, ``--redact`` patterns on request. Shared by the serving core and the
offline tools, so it sits beside neither."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from webshepherd.protocol.actions import FILLS, read_recorded
from webshepherd.protocol.errors import WebShepherdError

MASK = "[REDACTED]"
_PASSWORD_LINE = re.compile(r"(?i)pass(?:word|wd|code|phrase)|\bpin\b|secret")
_BID = re.compile(r"\[([^\]\s]+)\]|bid=['\"]?([\w-]+)")
_VALUE = re.compile(r"(value=)('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\S+)")


def password_elements(axtree: str) -> set[str]:
    """Element ids of the AX tree lines that look like password fields."""
    ids: set[str] = set()
    for line in axtree.splitlines():
        if _PASSWORD_LINE.search(line):
            m = _BID.search(line)
            if m:
                ids.add(m.group(1) or m.group(2))
    return ids


def mask_password_lines(axtree: str) -> str:
    """The AX tree with the ``value=`` of password-looking lines masked."""
    return "\n".join(
        _VALUE.sub(lambda m: f"{m.group(1)}'{MASK}'", line) if _PASSWORD_LINE.search(line) else line
        for line in axtree.split("\n")
    )


class Redactor:
    """Replaces known password values and ``--redact`` matches in every exported text."""

    def __init__(self, patterns: Sequence[str] = ()):
        self.patterns = []
        for p in patterns:
            try:
                self.patterns.append(re.compile(p))
            except re.error as e:
                raise WebShepherdError(
                    f"--redact {p!r}: not a valid regular expression ({e})"
                ) from e
        self.secrets: set[str] = set()

    def learn_passwords(self, actions: Iterable[tuple[str, str]]) -> None:
        """``(action, axtree of the page it acted on)``: remember values typed into password
        fields so they are masked wherever they appear (thoughts, later pages, history)."""
        for action, axtree in actions:
            p = read_recorded(action)
            if p.op in FILLS and p.text and p.element in password_elements(axtree):
                self.secrets.add(p.text)

    def action(self, action: str, axtree: str) -> str:
        """An action with the text it types into a password field masked."""
        p = read_recorded(action)
        if p.op in FILLS and p.text and p.element in password_elements(axtree):
            action = action.replace(p.text, MASK)
        return self.text(action)

    def text(self, value: str) -> str:
        for s in sorted(self.secrets, key=len, reverse=True):
            value = value.replace(s, MASK)
        for pat in self.patterns:
            value = pat.sub(MASK, value)
        return value

    def deep(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.deep(v) for v in value]
        if isinstance(value, dict):
            return {k: self.deep(v) for k, v in value.items()}
        return value
