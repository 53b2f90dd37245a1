"""What the session machine and the recorder exchange, in one module both may import (the
import contracts keep ``daemon.sessions`` and ``daemon.recorder`` independent).

The writes: one frozen dataclass per kind. The machine returns them as effects (sans-I/O);
:meth:`Recorder.apply` carries each out with the store operation of the same name. ``op``
names the kind (logs and tests). The read back: :class:`StoredSession`, what
:meth:`History.stored_session` reads for the machine to resume a session after a restart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from webshepherd.protocol.common import AgentInfo, Outcome, SessionSource, Turn
from webshepherd.protocol.replies import Checklist


@dataclass(frozen=True)
class SessionStartedRecord:
    op: ClassVar[str] = "session_started"
    session_id: str
    intent: str
    start_url: str | None
    agent: dict[str, Any]
    source: str
    created_at: float


@dataclass(frozen=True)
class ObservationRecord:
    op: ClassVar[str] = "observation"
    session_id: str
    step: int
    url: str
    axtree: str
    screenshot_mime: str | None
    screenshot: bytes | None
    created_at: float
    boxes: dict[str, list[float]] | None = None


@dataclass(frozen=True)
class ChecklistRecord:
    op: ClassVar[str] = "checklist"
    session_id: str
    source: str
    text: str
    items: list[dict[str, Any]]


@dataclass(frozen=True)
class ScoreRecord:
    op: ClassVar[str] = "score"
    session_id: str
    request_id: str
    step: int
    samples: int
    approval: str
    candidates: list[dict[str, str]]
    results: list[dict[str, Any]]
    best: int | None
    queue_ms: float
    model_ms: float
    created_at: float
    latest_reward: float | None


@dataclass(frozen=True)
class ScoreDecisionRecord:
    op: ClassVar[str] = "score_decision"
    session_id: str
    request_id: str
    decision: dict[str, Any]


@dataclass(frozen=True)
class ApprovalRequestedRecord:
    op: ClassVar[str] = "approval_requested"
    request_id: str
    session_id: str
    step: int
    candidate_index: int
    reward: float | None
    reason: str
    feedback: str
    created_at: float


@dataclass(frozen=True)
class ApprovalDecidedRecord:
    op: ClassVar[str] = "approval_decided"
    request_id: str
    decision: str
    status: str
    action: str | None
    by: str | None
    note: str | None
    decided_at: float


@dataclass(frozen=True)
class ActionRecord:
    op: ClassVar[str] = "action"
    session_id: str
    step: int
    action: str
    thought: str | None
    source: str
    created_at: float


@dataclass(frozen=True)
class LabelRecord:
    """Ground truth for a scored candidate: each checklist item's label (``label``)."""

    op: ClassVar[str] = "label"
    session_id: str
    step: int
    action: str
    items: list[str]
    source: str
    by: str
    note: str | None
    created_at: float


@dataclass(frozen=True)
class TreeNodeRecord:
    """One update of a tree search's node (``tree.node``): appended, never replaced, so the
    recording keeps every state a node went through (the latest per node is its state)."""

    op: ClassVar[str] = "tree_node"
    session_id: str
    node: int
    parent: int | None
    depth: int
    action: str | None
    thought: str | None
    reward: float | None
    count: int
    status: str
    executed: bool
    replays: int
    step: int | None
    expanded_at: int | None
    url: str | None
    error: str | None
    event: str
    trying: int | None
    created_at: float


@dataclass(frozen=True)
class SessionEndedRecord:
    op: ClassVar[str] = "session_ended"
    session_id: str
    outcome: str
    answer: str | None
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
    """A published event in the session's event log."""

    op: ClassVar[str] = "event"
    session_id: str
    body: dict[str, Any]


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


@dataclass(frozen=True)
class StoredScore:
    """One recorded score request: its step and per candidate ``(action, reward, levels)``
    (``levels`` is None when the candidate carried no checklist items)."""

    step: int
    candidates: tuple[tuple[str, float | None, dict[int, int] | None], ...]


@dataclass(frozen=True)
class StoredSession:
    """A recorded session as the machine needs it to continue (rows, no machine state)."""

    session_id: str
    intent: str
    start_url: str | None
    agent: AgentInfo
    source: SessionSource
    created_at: float
    latest_reward: float | None
    outcome: Outcome | None
    answer: str | None
    ended_at: float | None
    checklist: Checklist | None
    observation: tuple[int, str, str] | None  # the latest (step, url, axtree)
    actions: tuple[tuple[int, Turn], ...]  # (step, turn) in order
    scores: tuple[StoredScore, ...]
    # the search tree's nodes, (node, parent, depth, action), in node order (tree search)
    tree: tuple[tuple[int, int | None, int, str | None], ...] = ()
