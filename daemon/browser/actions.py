"""Kept importable for code written against the old path: the action module is
:mod:`webshepherd.protocol.actions` (the vocabulary, the parser and :class:`ActionError`)."""

from webshepherd.protocol.actions import (
    CLICKS,
    FILLS,
    MAX_ACTION_CHARS,
    OP_ONLY,
    SIGNATURES,
    TERMINAL,
    ActionError,
    Param,
    ParsedAction,
    RecordedAction,
    parse_action,
    parse_python,
    read_recorded,
)

__all__ = [
    "CLICKS",
    "FILLS",
    "MAX_ACTION_CHARS",
    "OP_ONLY",
    "SIGNATURES",
    "TERMINAL",
    "ActionError",
    "Param",
    "ParsedAction",
    "RecordedAction",
    "parse_action",
    "parse_python",
    "read_recorded",
]
