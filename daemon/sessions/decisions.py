"""Decisions: an open approval request resolved by a person, a timeout or a restart; a held
step's ``scored`` or a paused request's ``commit.decided`` follows."""

from __future__ import annotations

from webshepherd.daemon.records.approvals import ApprovalDecidedRecord
from webshepherd.daemon.sessions.approvals import Resolution
from webshepherd.daemon.sessions.commits import Commits, where_to_decide
from webshepherd.daemon.sessions.context import MachineContext
from webshepherd.daemon.sessions.effects import (
    ApprovalClosed,
    Effect,
    Publish,
    Reply,
)
from webshepherd.daemon.sessions.scoring import Scoring
from webshepherd.protocol import requests as rq
from webshepherd.protocol.commits import url_origin
from webshepherd.protocol.common import (
    MAX_NOTE_CHARS,
    Decider,
    DecisionInfo,
)
from webshepherd.protocol.errors import ProtocolError
from webshepherd.protocol.replies import ApprovalResolved

__all__ = ["Decisions"]


class Decisions:
    """The session machine's approval requests resolved."""

    def __init__(self, core: MachineContext, commits: Commits, scoring: Scoring) -> None:
        self.core, self.commits, self.scoring = core, commits, scoring

    def decide(self, conn: int, by: str, msg: rq.ApprovalDecide) -> list[Effect]:
        if msg.decision == "edit" and msg.request_id in self.commits.pending:
            raise ProtocolError(
                "decision: a request the browser paused is approved or rejected as it is; "
                "'edit' does not apply to it"
            )
        origin, note = None, msg.note
        if msg.allow_origin:
            origin = self._origin_to_allow(msg.request_id)
            said = f"{origin} allowed for the rest of this session"
            note = f"{said}; {msg.note}"[:MAX_NOTE_CHARS] if msg.note else said
        res = self.core.approvals.decide(msg.request_id, msg.decision, msg.action, by, note)
        if origin is not None and res.approved:
            self.core.sessions[res.session_id].allowed_origins[origin] = by
        return self.resolved(res, conn, msg.id)

    def _origin_to_allow(self, request_id: str) -> str:
        """The target origin of the paused request ``request_id`` (protocol/commits.py's
        url_origin); only a paused request's origin can be allowed."""
        commit = self.commits.pending.get(request_id)
        if commit is None:
            raise ProtocolError(
                "allow_origin: only a request the browser paused has an origin to allow; "
                f"{request_id!r} is not one waiting"
            )
        origin = url_origin(commit.request.url)
        if origin is None or origin == "file://":
            raise ProtocolError(
                f"allow_origin: {commit.request.url!r} has no origin a session can allow"
            )
        return origin

    def close_orphaned(self, open_: list[tuple[str, str]]) -> list[Effect]:
        """``(request_id, session_id)`` of approval requests a restart left open: the
        ``scored`` reply that waited for them died with the daemon, so they are closed as
        ``timeout`` by ``daemon``, recorded, and logged as ``approval.resolved`` events (the
        waiting client reads it with ``session.get``, approvers see no stale request)."""
        out: list[Effect] = []
        note = "the daemon restarted before anyone decided; score the step again to ask again"
        for request_id, session_id in open_:
            event = ApprovalResolved(
                request_id=request_id,
                session_id=session_id,
                decision="timeout",
                by="daemon",
                note=note,
            )
            out.append(ApprovalDecidedRecord(event, "timeout", self.core.clock()))
            out.append(Publish(session_id, event, to_approvers=True))
        return out

    def expire(self, request_id: str) -> list[Effect]:
        res = self.core.approvals.expire(request_id)
        return [] if res is None else self.resolved(res, None, None)

    def asker_gone(self, conn: int, session_id: str) -> list[Effect]:
        """Connection ``conn`` closed: the requests it paused in ``session_id`` and is still
        asking about are refused by the daemon (its browser failed them when it lost the
        daemon, issue 49), so no person approves a request that can no longer be sent."""
        out: list[Effect] = []
        note = "the browser that paused it went away before anyone decided; it was refused"
        for rid, commit in list(self.commits.pending.items()):
            if commit.conn != conn or commit.session_id != session_id:
                continue
            res = self.core.approvals.refuse_open(rid, note)
            if res is not None:
                out += self.resolved(res, None, None)
        return out

    def resolved(self, res: Resolution, conn: int | None, rid: str | None) -> list[Effect]:
        commit = self.commits.pending.pop(res.request_id, None)
        st = self.core.sessions[res.session_id]
        st.waiting_approvals = max(0, st.waiting_approvals - 1)
        timed_out = res.decision == "timeout"
        decider: Decider = "timeout" if timed_out else "daemon" if res.by == "daemon" else "person"
        note = res.note
        if commit is not None and timed_out:
            note = (
                f"nobody decided within {self.core.approval_timeout_s:g} s; refused (a paused "
                "request is never let go by default)"
            )
        event = ApprovalResolved(
            request_id=res.request_id,
            session_id=res.session_id,
            decision=res.decision,
            action=None if commit is not None else res.action,
            by=res.by,
            note=note,
        )
        out: list[Effect] = [
            ApprovalDecidedRecord(event, res.status, self.core.clock()),
            Publish(res.session_id, event, to_approvers=True, exclude=conn),
        ]
        if conn is not None and rid is not None:
            out.append(Reply(conn, event.model_copy(update={"id": rid})))
        out.append(ApprovalClosed(res.request_id))
        # a person's refusal is final for that request: no way out (no "ask again", no
        # looser mode); a timeout's names where a person could decide in time
        way_out = None
        if timed_out and not res.approved:
            where = where_to_decide(self.core.places(res.session_id))
            way_out = (
                f"a person decides within {self.core.approval_timeout_s:g} s when it is asked "
                f"again, {where}"
            )
        if commit is not None:
            info = DecisionInfo(
                status=res.status,
                by=res.by,
                note=note,
                decider=decider,
                way_out=way_out,
                mode=commit.mode,
            )
            return out + self.commits.decided(
                commit.conn,
                commit.request_id,
                commit.session_id,
                commit.request,
                commit.digest,
                info,
                False,
            )
        pending = self.scoring.pending.pop(res.request_id)
        decision = DecisionInfo(
            status=res.status,
            index=pending.best,
            action=res.action if res.approved else None,
            by=res.by,
            note=res.note,
            guard=pending.guard,
            decider=decider,
            way_out=way_out,
            mode=st.mode,
        )
        return out + self.scoring.scored(
            pending.job,
            pending.score,
            pending.best,
            decision,
            pending.guarded,
            pending.predicted,
        )
