"""The client's sans-I/O core: requests out with ids, frames in, outcomes out.

:class:`ClientCore` numbers requests, remembers which call waits for which reply, and turns
each frame from the daemon into outcomes for the I/O layer to carry out: a typed reply or a
typed error for the waiting call (:class:`Resolved`, :class:`Failed`), an event for the
subscriptions (:class:`Event`), a score's progress (:class:`Progress`), a session's checklist
(:class:`ChecklistArrived`). It holds no socket, task or future; :class:`~.AsyncClient`
drives it over websockets, and the tests drive it with the protocol's vectors.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass

from pydantic import BaseModel
from webshepherd.protocol.common import ClientInfo, Screenshot
from webshepherd.protocol.errors import (
    ConnectionLostError,
    ErrorCode,
    ProtocolError,
    UnauthorizedError,
    WebShepherdError,
    error_from_code,
)
from webshepherd.protocol.refusal import refusal_text
from webshepherd.protocol.replies import (
    ActionEvent,
    ActionRecorded,
    ApprovalRequest,
    ApprovalResolved,
    Checklist,
    CommitDecided,
    Error,
    Observed,
    Scored,
    ScoreProgress,
    SessionEnded,
    SessionStarted,
)
from webshepherd.protocol.requests import (
    Action,
    ClientMessage,
    CommitCheck,
    Hello,
    Observe,
    Score,
    SessionStart,
)
from webshepherd.protocol.steps import step_label
from webshepherd.protocol.union import ServerMessage, parse_server_message
from webshepherd.protocol.version import PROTOCOL_VERSION

log = logging.getLogger(__name__)

#: The close code of a daemon that refuses the client (policy violation: a bad token).
REFUSED_CLOSE_CODE = 1008
#: What a lost connection's close code says about the daemon.
_CLOSED = {
    1006: ", no close frame: the daemon was killed or the network dropped",
    1001: ", the daemon is stopping",
    1011: ", the daemon failed",
}


@dataclass(frozen=True)
class Resolved:
    """The reply a waiting call expected."""

    id: str
    reply: BaseModel


@dataclass(frozen=True)
class Failed:
    """A waiting call's error: an error reply, a reply of the wrong type, a lost connection."""

    id: str
    error: WebShepherdError


@dataclass(frozen=True)
class Event:
    """A message for the subscriptions (an event, or the event of this client's own request)."""

    message: ServerMessage


@dataclass(frozen=True)
class Progress:
    """Partial output of a score request this client is waiting on."""

    message: ScoreProgress


@dataclass(frozen=True)
class ChecklistArrived:
    """A session's checklist (the daemon pushes it once, after ``session.start``)."""

    checklist: Checklist


Outcome = Resolved | Failed | Event | Progress | ChecklistArrived


@dataclass(frozen=True)
class _Waiting:
    request: ClientMessage
    expect: type[BaseModel]


class ClientCore:
    """Request ids, the calls waiting for replies, and the routing of every frame received."""

    def __init__(self, info: ClientInfo) -> None:
        self.info = info
        self.checklists: dict[str, Checklist] = {}
        self.refused: WebShepherdError | None = None  # the daemon refused this client for good
        self._waiting: dict[str, _Waiting] = {}
        self._ids = itertools.count(1)

    def next_id(self, prefix: str = "r") -> str:
        return f"{prefix}{next(self._ids)}"

    def hello(self, token: str, approver: str | None = None) -> Hello:
        return Hello(
            id=self.next_id("h"),
            protocol=PROTOCOL_VERSION,
            token=token,
            client=self.info,
            approver=approver,
        )

    def sent(self, request: ClientMessage, expect: type[BaseModel]) -> None:
        """``request`` (with its ``id``) is on its way; its reply should be an ``expect``."""
        self._waiting[request.id] = _Waiting(request, expect)

    def forget(self, request_id: str) -> None:
        """The call stopped waiting (timed out, or its frame was never sent)."""
        self._waiting.pop(request_id, None)

    @property
    def waiting(self) -> int:
        """How many calls wait for a reply."""
        return len(self._waiting)

    def receive(self, frame: str | bytes) -> list[Outcome]:
        """One frame from the daemon; a frame the client does not understand is ignored."""
        try:
            message: ServerMessage = parse_server_message(frame)
        except ProtocolError as exc:  # e.g. a type from a newer daemon
            log.debug("ignoring a frame the client does not understand: %s", exc.message)
            return []
        rid = getattr(message, "id", None)
        if rid is not None and rid in self._waiting:
            return self._reply(self._waiting.pop(rid), message)
        if rid is not None and not isinstance(message, Error):
            return []  # a late reply to a call that gave up waiting
        out: list[Outcome] = []
        if isinstance(message, Error):
            # handled, so not a warning: a late reply's caller has had its own error (a
            # timeout); a checklist the judge failed to write (model_error, no id) is the
            # reason every score of the session answers with (reward None, its feedback)
            handled = rid is not None or message.code is ErrorCode.MODEL_ERROR
            level = logging.DEBUG if handled else logging.WARNING
            log.log(level, "daemon error %s: %s", message.code.value, message.message)
            if message.code is ErrorCode.UNAUTHORIZED:
                self.refused = error_from_code(message.code.value, message.message)
        elif isinstance(message, Checklist):
            self.checklists[message.session_id] = message
            out.append(ChecklistArrived(message))
        elif isinstance(message, ScoreProgress) and message.request in self._waiting:
            out.append(Progress(message))
        elif isinstance(message, ApprovalRequest) and self._scoring(message.session_id):
            log.warning("%s", held_score_line(message))
        out.append(Event(message))
        return out

    def _scoring(self, session_id: str) -> bool:
        """Whether a ``score`` or ``commit.check`` of this client for ``session_id`` waits for
        its reply."""
        return any(
            isinstance(w.request, Score | CommitCheck) and w.request.session_id == session_id
            for w in self._waiting.values()
        )

    def _reply(self, waiting: _Waiting, message: ServerMessage) -> list[Outcome]:
        request, rid = waiting.request, waiting.request.id
        if isinstance(message, Error):
            error = error_from_code(message.code.value, message.message, message.retryable)
            return [Failed(rid, error)]
        if not isinstance(message, waiting.expect):
            return [
                Failed(
                    rid,
                    ProtocolError(
                        f"expected {waiting.expect.__name__} in reply to {request.type!r}, "
                        f"got {type(message).__name__}"
                    ),
                )
            ]
        out: list[Outcome] = [Resolved(rid, message)]
        if isinstance(message, Scored) and (refused := guard_refusal_line(message)):
            log.warning("%s", refused)
        if isinstance(message, CommitDecided) and (refused := commit_refusal_line(message)):
            log.warning("%s", refused)
        event = own_request_event(request, message)
        if event is not None:
            out.append(Event(event))
        return out

    def disconnected(
        self, close_code: int | None, close_reason: str = "", url: str = ""
    ) -> WebShepherdError:
        """The connection closed: the error for the calls in flight, naming the daemon at
        ``url`` and why it went (a refusal is for good)."""
        if close_code == REFUSED_CLOSE_CODE:
            reason = close_reason or "the daemon refused this client (close code 1008)"
            self.refused = self.refused or UnauthorizedError(reason)
        why = _CLOSED.get(close_code, "") if close_code is not None else _CLOSED[1006]
        said = f": {close_reason}" if close_reason else ""
        return self.refused or ConnectionLostError(
            f"connection to the webshepherd daemon{f' at {url}' if url else ''} lost "
            f"(close code {close_code}{said}{why}); a call in flight got no answer",
            retryable=True,
        )

    def fail_all(self, error: WebShepherdError) -> list[Failed]:
        """Every waiting call fails with ``error`` (the connection is gone)."""
        waiting, self._waiting = self._waiting, {}
        return [Failed(rid, error) for rid in waiting]


_WHY_HELD = {
    "always": "the score asked for approval (approval='always')",
    "below_threshold": "the best reward ({reward}) is below the daemon's approval threshold",
    "reward_drop": "the best reward ({reward}) fell sharply from the previous step's",
    "guarded": "a guard holds it whatever its reward ({guard})",
    "commit": "the browser paused a request that commits ({action})",
}


def held_score_line(request: ApprovalRequest) -> str:
    """What the SDK logs when one of its scores waits for a person: why, and how it ends."""
    reward = "none parsed" if request.reward is None else f"{request.reward:.3f}"
    guard = "; ".join(f"{h.rule}: {h.detail}" for h in request.guard)
    why = _WHY_HELD.get(request.reason, request.reason).format(
        reward=reward, guard=guard, action=request.candidate.action[:200]
    )
    what = "a paused request" if request.reason == "commit" else "the score"
    return (
        f"webshepherd: {what} of {step_label(request.step)} waits for a person: {why}. "
        "A paired tool that shows this session decides: `webshepherd tui` (Approvals tab), or "
        "the extension's side panel only when a tab of the paired browser follows this session; "
        f"within {request.expires_in_s:g} s, else the daemon's default applies; "
        + (
            "approval='never' does not skip a guard (nobody deciding in time rejects it)."
            if request.reason == "guarded"
            else "nobody deciding in time refuses it."
            if request.reason == "commit"
            else "score with approval='never' not to wait."
        )
    )


def guard_refusal_line(scored: Scored) -> str | None:
    """What the SDK logs when its best candidate was refused without a person deciding (the
    guard with nobody connected, the session's mode, a timeout): who decided and the way
    out (None: not such a refusal)."""
    d = scored.decision
    if d.action is not None or d.status not in ("rejected", "timeout") or d.decider == "person":
        return None
    if d.decider is None and not (d.guard and d.by == "daemon"):  # an older daemon's
        return None
    return (
        f"webshepherd: the daemon refused the action of {step_label(scored.step)}: {d.note} "
        f"(decided by: {d.decider or 'guard'}; way out: {d.way_out or 'none given'}; "
        "decision.guard lists the rules; do not run it)"
    )


def commit_refusal_line(decided: CommitDecided) -> str | None:
    """What the SDK logs when a request it asked about may not leave (None: it may): the
    refusal's one sentence (:func:`~webshepherd.protocol.refusal.refusal_text`), who decided
    first (a person, never "the daemon", when a person refused it)."""
    d = decided.decision
    if d.status == "approved":
        return None
    r = decided.request
    return f"webshepherd: paused request {refusal_text(d, f'{r.method} {r.url[:200]}')}"


def own_request_event(request: ClientMessage, reply: BaseModel) -> ServerMessage | None:
    """The event other subscribers got for this connection's own request (the daemon sends the
    requester only the reply), so this connection's subscriptions see every event too."""
    if isinstance(reply, SessionStarted) and isinstance(request, SessionStart):
        return reply.model_copy(
            update={
                "id": None,
                "intent": request.intent,
                "start_url": request.start_url,
                "agent": request.agent,
                "source": request.source,
            }
        )
    if isinstance(reply, Observed) and isinstance(request, Observe):
        shot = Screenshot(mime=request.screenshot.mime) if request.screenshot else None
        return reply.model_copy(
            update={
                "id": None,
                "session_id": request.session_id,
                "url": request.url,
                "axtree": request.axtree,
                "screenshot": shot,
            }
        )
    if isinstance(reply, Scored) and isinstance(request, Score):
        return reply.model_copy(update={"id": None, "candidates": request.candidates})
    if isinstance(reply, ActionRecorded) and isinstance(request, Action):
        return ActionEvent(
            session_id=reply.session_id,
            step=reply.step,
            action=request.action,
            thought=request.thought,
            source=request.source,
        )
    if isinstance(reply, SessionEnded | ApprovalResolved):
        return reply.model_copy(update={"id": None})
    return None
