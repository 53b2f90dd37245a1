"""What :meth:`History.stored_session` reads back for the session machine to resume a session
after a restart (rows, no machine state)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from webshepherd.protocol.common import CommitMode, SessionHeader, Turn
from webshepherd.protocol.replies import Checklist


@dataclass(frozen=True)
class StoredScore:
    """One recorded score request: its step and per candidate ``(action, reward, levels)``
    (``levels`` is None when the candidate carried no checklist items)."""

    step: int
    candidates: tuple[tuple[str, float | None, dict[int, int] | None], ...]


@dataclass(frozen=True)
class StoredSession:
    """A recorded session as the machine needs it to continue (rows, no machine state)."""

    header: SessionHeader  # its ``sessions`` row
    answer: str | None
    checklist: Checklist | None
    observation: tuple[int, str, str] | None  # the latest (step, url, axtree)
    actions: tuple[tuple[int, Turn], ...]  # (step, turn) in order
    scores: tuple[StoredScore, ...]
    # the search tree's nodes, (node, parent, depth, action), in node order (tree search)
    tree: tuple[tuple[int, int | None, int, str | None], ...] = ()
    mode: CommitMode | None = None  # the latest recorded (mode.set, else session.started)
    holds: Literal["browser"] | None = None  # session.started's
