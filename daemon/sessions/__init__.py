"""Sessions as a sans-I/O state machine: messages in, effects out."""

from webshepherd.daemon.records.kind import Record
from webshepherd.daemon.sessions.caller import Caller
from webshepherd.daemon.sessions.effects import (
    ApprovalClosed,
    AwaitApproval,
    Effect,
    Publish,
    Reply,
    RunChecklist,
    RunScore,
)
from webshepherd.daemon.sessions.machine import Scorer, SessionCore
from webshepherd.daemon.sessions.state import LiveSession

__all__ = [
    "ApprovalClosed",
    "AwaitApproval",
    "Caller",
    "Effect",
    "LiveSession",
    "Publish",
    "Record",
    "Reply",
    "RunChecklist",
    "RunScore",
    "Scorer",
    "SessionCore",
]
