"""What the machine's collaborators (``commits``, ``scoring``, ``decisions``) read of it: a
Protocol that :class:`~.machine.SessionCore` satisfies, so that they type against it without
importing the machine (which imports them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from webshepherd.daemon.sessions.approvals import ApprovalBook, ApprovalPolicy
from webshepherd.daemon.sessions.guards import GuardPolicy
from webshepherd.daemon.sessions.state import LiveSession


class MachineContext(Protocol):
    """The session machine's shared state and settings, as its collaborators see them."""

    sessions: dict[str, LiveSession]
    approvals: ApprovalBook
    policy: ApprovalPolicy
    guards: GuardPolicy
    sandbox_origins: tuple[str, ...]
    commit_patterns: tuple[str, ...]
    approval_timeout_s: float
    clock: Callable[[], float]

    def get(self, session_id: str, *, open_only: bool = True) -> LiveSession: ...

    def person_present(self) -> bool: ...

    def places(self, session_id: str) -> tuple[str, ...]: ...
