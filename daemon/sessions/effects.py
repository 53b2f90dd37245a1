"""What the session state machine asks the outside world to do.

The machine never does I/O; it returns these, in the order they must happen.
A ``Record`` comes before the ``Reply`` that acknowledges it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from webshepherd.daemon.engine.types import StepInput
from webshepherd.daemon.records.kind import Record
from webshepherd.protocol.common import ApprovalMode, Candidate, ElementFacts


@dataclass(frozen=True)
class Reply:
    """Answer the connection that sent the request."""

    conn: int
    message: BaseModel


@dataclass(frozen=True)
class Publish:
    """An event of a session: to its owner and subscribers (not ``exclude``), logged in order."""

    session_id: str
    event: BaseModel
    exclude: int | None = None  # the requester, who got the same thing as a reply
    to_approvers: bool = False  # also every extension and monitor connection


@dataclass(frozen=True)
class RunChecklist:
    """Ask the engine to generate the session's checklist (a client's own checklist is
    parsed and recorded with the session's start, never through the engine's queue)."""

    session_id: str
    intent: str
    start_url: str
    axtree: str
    owner: int | None = None  # the session's connection (told when the generation fails)


@dataclass(frozen=True)
class RunScore:
    """Ask the engine to score ``input``, the step as the judge reads it, built once here
    (its candidates the client's own; its checklist None while the session's is being
    generated: the runner adds that one when the step runs). The result comes back via
    ``SessionCore.score_done``."""

    session_id: str
    conn: int
    request_id: str
    step: int
    input: StepInput[Candidate]
    approval: ApprovalMode
    # the observation's element boxes and facts (the approval card, the guards read them)
    boxes: dict[str, list[float]] | None = None
    elements: dict[str, ElementFacts] | None = None
    origin: str | None = None  # the session's origin (the guards: sessions/guards.py)
    owner: int | None = None  # the session's connection (gets the score's progress frames)


@dataclass(frozen=True)
class AwaitApproval:
    """Start the timer of an approval request; the scored reply waits for its resolution."""

    request_id: str
    timeout_s: float


@dataclass(frozen=True)
class ApprovalClosed:
    """An approval request was closed: wake whoever waits for it."""

    request_id: str


Effect = Reply | Publish | Record | RunChecklist | RunScore | AwaitApproval | ApprovalClosed


def reply_and_publish(
    conn: int,
    request_id: str,
    session_id: str,
    event: BaseModel,
    reply_update: dict[str, Any] | None = None,
) -> tuple[Reply, Publish]:
    """The requester's reply (the event with the request's ``id``, and ``reply_update``), then
    the same event for everyone else."""
    reply = event.model_copy(update={"id": request_id, **(reply_update or {})})
    return Reply(conn, reply), Publish(session_id, event, exclude=conn)
