"""The session modes in one table: what each does to a write a paused browser asks about, in
the words a person reads, and which way is looser (issue 51: loosening asks first)."""

from __future__ import annotations

from typing import get_args

from webshepherd.protocol.common import CommitMode

__all__ = ["MODES", "MODE_DOES", "MODE_NAMES", "loosens", "mode_name", "strictness"]

MODES: tuple[CommitMode, ...] = get_args(CommitMode)

#: What each mode is called on screen: what it does, in two or three words. The wire keeps
#: ``ask``, ``watch`` and ``stop`` (a contract); ``stop`` read as "stop the agent", which it
#: never does. The extension mirrors this table (protocol/vectors/modes.json holds both to it).
MODE_NAMES: dict[CommitMode, str] = {
    "ask": "ask first",
    "watch": "run and flag",
    "stop": "block writes",
}

#: What each mode does to a write, one sentence each.
MODE_DOES: dict[CommitMode, str] = {
    "ask": "each write waits for a paired person; with nobody paired it is refused",
    "watch": "writes run without waiting and are only flagged",
    "stop": "every write is refused without asking; the agent keeps running",
}

#: Strictest first: a write is refused, asked about, or let through.
_ORDER: tuple[CommitMode, ...] = ("stop", "ask", "watch")


def mode_name(mode: CommitMode | None) -> str:
    """The on-screen name with the wire name after it (``block writes (stop)``)."""
    return "not known yet" if mode is None else f"{MODE_NAMES[mode]} ({mode})"


def strictness(mode: CommitMode | None) -> int:
    """Higher is stricter; a mode not known yet counts as the daemon's default, ``ask``."""
    return len(_ORDER) - _ORDER.index(mode or "ask")


def loosens(old: CommitMode | None, new: CommitMode) -> bool:
    """Whether switching ``old`` to ``new`` lets through something ``old`` held."""
    return strictness(new) < strictness(old)
