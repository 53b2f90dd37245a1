"""What the session machine and the recorder exchange, in one module both may import (the
import contracts keep ``daemon.sessions`` and ``daemon.recorder`` independent).

The writes: one frozen dataclass per kind. The machine returns them as effects (sans-I/O);
:meth:`Recorder.apply` carries each out with the store operation of the same name. ``op``
names the kind (logs and tests). A write that has a wire message carries it (the event the
machine publishes, or the request), plus only what that lacks, so each fact is stated once.
The read back: :class:`StoredSession` (``records/stored.py``), what
:meth:`History.stored_session` reads for the machine to resume a session after a restart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel
from webshepherd.daemon.records.stored import StoredScore, StoredSession
from webshepherd.protocol.common import Candidate, CandidateResult, Timing
from webshepherd.protocol.replies import (
    ActionEvent,
    ApprovalRequest,
    ApprovalResolved,
    Checklist,
    Observed,
    Scored,
    SessionEnded,
    SessionStarted,
    TreeNodeEvent,
)
from webshepherd.protocol.requests import Label


@dataclass(frozen=True)
class SessionStartedRecord:
    op: ClassVar[str] = "session_started"
    event: SessionStarted
    created_at: float


@dataclass(frozen=True)
class ObservationRecord:
    """The ``observed`` event (screenshot mime only) and what it does not carry."""

    op: ClassVar[str] = "observation"
    event: Observed
    screenshot: bytes | None
    created_at: float
    boxes: dict[str, list[float]] | None = None


@dataclass(frozen=True)
class ChecklistRecord:
    op: ClassVar[str] = "checklist"
    event: Checklist


@dataclass(frozen=True)
class ScoreRecord:
    """A scored step, written before its decision is known (the ``scored`` event, built from
    the same candidates and results, comes with :class:`ScoreDecisionRecord`)."""

    op: ClassVar[str] = "score"
    session_id: str
    request_id: str
    step: int
    samples: int
    approval: str
    candidates: list[Candidate]
    results: list[CandidateResult]
    best: int | None
    timing: Timing
    created_at: float
    latest_reward: float | None


@dataclass(frozen=True)
class ScoreDecisionRecord:
    """The ``scored`` event: its decision, kept with the score request it answers."""

    op: ClassVar[str] = "score_decision"
    request_id: str
    event: Scored


@dataclass(frozen=True)
class ApprovalRequestedRecord:
    op: ClassVar[str] = "approval_requested"
    event: ApprovalRequest
    created_at: float


@dataclass(frozen=True)
class ApprovalDecidedRecord:
    op: ClassVar[str] = "approval_decided"
    event: ApprovalResolved
    status: str
    decided_at: float


@dataclass(frozen=True)
class ActionRecord:
    op: ClassVar[str] = "action"
    event: ActionEvent
    created_at: float


@dataclass(frozen=True)
class LabelRecord:
    """Ground truth for a scored candidate: the ``label`` request, who gave it, and when."""

    op: ClassVar[str] = "label"
    label: Label
    by: str
    created_at: float


@dataclass(frozen=True)
class TreeNodeRecord:
    """One update of a tree search's node (``tree.node``): appended, never replaced, so the
    recording keeps every state a node went through (the latest per node is its state)."""

    op: ClassVar[str] = "tree_node"
    event: TreeNodeEvent
    created_at: float


@dataclass(frozen=True)
class SessionEndedRecord:
    op: ClassVar[str] = "session_ended"
    event: SessionEnded
    ended_at: float


@dataclass(frozen=True)
class ScorerRecord:
    """Which model and backend scored a session, with the judging settings (prompt style,
    temperature, the checkpoint's sampling settings…; written with its start)."""

    op: ClassVar[str] = "scorer"
    session_id: str
    model: str
    backend: str
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EventRecord:
    """A published event, for the session's event log."""

    op: ClassVar[str] = "event"
    session_id: str
    event: BaseModel


Record = (
    SessionStartedRecord
    | ObservationRecord
    | ChecklistRecord
    | ScoreRecord
    | ScoreDecisionRecord
    | ApprovalRequestedRecord
    | ApprovalDecidedRecord
    | ActionRecord
    | LabelRecord
    | TreeNodeRecord
    | SessionEndedRecord
    | ScorerRecord
    | EventRecord
)
"""Any write of the session machine."""

__all__ = [
    "ActionRecord",
    "ApprovalDecidedRecord",
    "ApprovalRequestedRecord",
    "ChecklistRecord",
    "EventRecord",
    "LabelRecord",
    "ObservationRecord",
    "Record",
    "ScoreDecisionRecord",
    "ScoreRecord",
    "ScorerRecord",
    "SessionEndedRecord",
    "SessionStartedRecord",
    "StoredScore",
    "StoredSession",
    "TreeNodeRecord",
]
