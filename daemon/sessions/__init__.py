"""Sessions as a sans-I/O state machine: messages in, effects out."""

from webshepherd.daemon.sessions.effects import (
    AwaitApproval,
    Effect,
    Publish,
    Record,
    Reply,
    Resolved,
    RunChecklist,
    RunScore,
)
from webshepherd.daemon.sessions.machine import SessionCore
from webshepherd.daemon.sessions.state import SessionState

__all__ = [
    "AwaitApproval",
    "Effect",
    "Publish",
    "Record",
    "Reply",
    "Resolved",
    "RunChecklist",
    "RunScore",
    "SessionCore",
    "SessionState",
]
