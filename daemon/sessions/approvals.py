"""The approval gate: when to ask a human, and the book of open requests (no I/O).

``approval_reason`` is the policy. ``ApprovalBook`` holds the open requests:
the first decision (or the timeout) closes one; anything later is refused.
The socket layer keeps the timers and wakes the waiting ``scored`` reply.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from webshepherd.protocol.common import ApprovalMode, ApprovalReason, DecisionStatus
from webshepherd.protocol.errors import ProtocolError

_ID = re.compile(r"a(\d+)-.*", re.DOTALL)  # a request id: its serial, then its session's prefix
DecisionWord = Literal["approve", "reject", "edit", "timeout"]
_STATUS: dict[str, DecisionStatus] = {
    "approve": "approved",
    "reject": "rejected",
    "edit": "edited",
}


# The default approval policy, in one place (DaemonConfig and `serve` take these).
DEFAULT_THRESHOLD: float | None = 0.3  # best reward below this asks a person
DEFAULT_DROP: float | None = 0.3  # a fall of at least this from the previous step asks a person
DEFAULT_TIMEOUT_S = 120.0  # how long a held score waits for the decision
DEFAULT_ON_TIMEOUT = "reject"  # what applies when nobody decides in time


@dataclass(frozen=True)
class ApprovalPolicy:
    threshold: float | None = DEFAULT_THRESHOLD
    drop: float | None = DEFAULT_DROP


def approval_reason(
    mode: ApprovalMode,
    best_reward: float | None,
    previous_reward: float | None,
    policy: ApprovalPolicy,
    *,
    person_present: bool = True,
    guarded: bool = False,
) -> ApprovalReason | None:
    """Why a person must decide, or None. No reward at all counts as below the threshold.

    A score that did not ask (``auto``) is held by the policy only while a person can answer
    (``person_present``: a paired extension or TUI is connected); one that asked (``always``)
    is held regardless. A ``guarded`` action (sessions/guards.py) is held whatever the mode
    (``never`` included) and the reward: the caller refuses it when nobody can answer.
    """
    if guarded:
        return "guarded"
    if mode == "never":
        return None
    if mode == "always":
        return "always"
    if not person_present:
        return None
    if policy.threshold is not None and (best_reward is None or best_reward < policy.threshold):
        return "below_threshold"
    if (
        policy.drop is not None
        and best_reward is not None
        and previous_reward is not None
        and previous_reward - best_reward >= policy.drop
    ):
        return "reward_drop"
    return None


def describe_policy(policy: ApprovalPolicy, timeout_s: float, on_timeout: str) -> str:
    """The policy in one line, as ``serve`` shows it at start."""
    asks = []
    if policy.threshold is not None:
        asks.append(f"the best reward is below {policy.threshold:g} (or none parsed)")
    if policy.drop is not None:
        asks.append(f"it falls by {policy.drop:g} or more from the previous step")
    when = " or ".join(asks) if asks else "never by itself"
    return (
        f"approvals: a score waits for a person when {when}, only while an extension or "
        f"`webshepherd tui` is paired and connected (a score with approval='always' always waits); "
        f"{timeout_s:g} s, then '{on_timeout}'"
    )


@dataclass(frozen=True)
class Resolution:
    """How an approval request ended."""

    request_id: str
    session_id: str
    decision: DecisionWord  # what was decided ("timeout": nobody answered)
    status: DecisionStatus  # what ``scored.decision.status`` says
    action: str | None  # the action to execute (the edit, or the candidate's)
    by: str | None
    note: str | None
    approved: bool


@dataclass
class OpenRequest:
    request_id: str
    session_id: str
    step: int
    candidate_index: int
    action: str
    resolution: Resolution | None = None
    guarded: bool = (
        False  # a guard held it: nobody deciding in time rejects it, whatever the default
    )


class ApprovalBook:
    """Open approval requests, keyed by request id."""

    def __init__(self, default_on_timeout: str = DEFAULT_ON_TIMEOUT):
        self.default_on_timeout = default_on_timeout
        self._open: dict[str, OpenRequest] = {}
        self._closed: dict[str, Resolution] = {}
        self._ids = itertools.count(1)

    def continue_after(self, recorded: Iterable[str]) -> None:
        """Number new requests after the ``recorded`` ids (a restart's record), so an id never
        repeats across restarts; a fresh data dir starts at 1."""
        serials = (int(m[1]) for rid in recorded if (m := _ID.fullmatch(rid)))
        self._ids = itertools.count(max(serials, default=0) + 1)

    def __len__(self) -> int:
        return len(self._open)

    def session_of(self, request_id: str) -> str | None:
        """The session of an open request (None: unknown or already closed)."""
        req = self._open.get(request_id)
        return req.session_id if req else None

    def snapshot(self) -> tuple[dict[str, OpenRequest], dict[str, Resolution]]:
        return dict(self._open), dict(self._closed)

    def restore(self, snapshot: tuple[dict[str, OpenRequest], dict[str, Resolution]]) -> None:
        self._open, self._closed = dict(snapshot[0]), dict(snapshot[1])

    def open(
        self,
        session_id: str,
        step: int,
        candidate_index: int,
        action: str,
        *,
        guarded: bool = False,
    ) -> OpenRequest:
        rid = f"a{next(self._ids)}-{session_id[:8]}"  # the shape _ID reads back
        req = OpenRequest(rid, session_id, step, candidate_index, action, guarded=guarded)
        self._open[rid] = req
        return req

    def refuse(
        self, session_id: str, step: int, candidate_index: int, action: str, note: str
    ) -> tuple[OpenRequest, Resolution]:
        """A guarded request nobody can decide: opened and rejected by the daemon at once."""
        req = self.open(session_id, step, candidate_index, action, guarded=True)
        del self._open[req.request_id]
        res = Resolution(
            req.request_id, session_id, "reject", "rejected", None, "daemon", note, False
        )
        self._closed[req.request_id] = res
        return req, res

    def decide(
        self,
        request_id: str,
        decision: Literal["approve", "reject", "edit"],
        action: str | None,
        by: str | None,
        note: str | None,
    ) -> Resolution:
        """Close a request with a human decision; a second decision raises ``ProtocolError``."""
        req = self._take(request_id)
        chosen = action if decision == "edit" else req.action
        res = Resolution(
            request_id,
            req.session_id,
            decision,
            _STATUS[decision],
            chosen,
            by,
            note,
            approved=decision != "reject",
        )
        self._closed[request_id] = res
        return res

    def expire(self, request_id: str) -> Resolution | None:
        """Apply the configured default; None when the request was already decided."""
        req = self._open.pop(request_id, None)
        if req is None:
            return None
        default = "reject" if req.guarded else self.default_on_timeout
        approved = default == "approve"
        res = Resolution(
            request_id,
            req.session_id,
            "timeout",
            "timeout",
            req.action,
            None,
            f"no decision in time; default {default!r} applied"
            + (" (a guarded step is never approved by default)" if req.guarded else ""),
            approved=approved,
        )
        self._closed[request_id] = res
        return res

    def refuse_open(self, request_id: str, note: str) -> Resolution | None:
        """Close an open request as refused by the daemon (whoever asked is gone, so nobody
        could act on a decision); None when it was already decided."""
        req = self._open.pop(request_id, None)
        if req is None:
            return None
        res = Resolution(
            request_id, req.session_id, "reject", "rejected", None, "daemon", note, False
        )
        self._closed[request_id] = res
        return res

    def cancel_session(self, session_id: str) -> list[str]:
        """Forget the open requests of a session (its requester went away)."""
        gone = [rid for rid, r in self._open.items() if r.session_id == session_id]
        for rid in gone:
            del self._open[rid]
        return gone

    def _take(self, request_id: str) -> OpenRequest:
        req = self._open.pop(request_id, None)
        if req is not None:
            return req
        done = self._closed.get(request_id)
        if done is not None:
            who = f" by {done.by}" if done.by else ""
            raise ProtocolError(
                f"request_id: approval {request_id!r} was already resolved ({done.decision}{who}); "
                "the first decision wins"
            )
        raise ProtocolError(f"request_id: no open approval request {request_id!r}")
