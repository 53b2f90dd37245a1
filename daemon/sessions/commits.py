"""Modes and paused requests: a paired person sets a session's mode; a request the browser
paused (``commit.check``) is answered by the mode, the sandbox origins and the origins a
person allowed for the session, or waits for a paired person in 'ask'."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from webshepherd.daemon.records.approvals import ApprovalDecidedRecord, ApprovalRequestedRecord
from webshepherd.daemon.sessions.cards import causing_step, commit_card, commit_why
from webshepherd.daemon.sessions.context import MachineContext
from webshepherd.daemon.sessions.effects import (
    AwaitApproval,
    Effect,
    Publish,
    Reply,
)
from webshepherd.daemon.sessions.modes import (
    PAIR,
    commit_headline,
    in_sandbox,
)
from webshepherd.protocol import requests as rq
from webshepherd.protocol.commits import request_digest, url_origin
from webshepherd.protocol.common import (
    MAX_ACTION_CHARS,
    Candidate,
    CommitMode,
    Decider,
    DecisionInfo,
    HeldRequest,
)
from webshepherd.protocol.errors import UnauthorizedError
from webshepherd.protocol.replies import (
    ApprovalRequest,
    ApprovalResolved,
    CommitDecided,
    ModeSet,
)

__all__ = ["Commits", "PendingCommit", "where_to_decide"]


def where_to_decide(places: tuple[str, ...]) -> str:
    """Where a person could decide, naming only the paired, connected tools that show the
    session (``MachineContext.places``); with none, that nobody is there and how to pair."""
    if places:
        return "in " + " or ".join(places)
    return f"but no paired tool that shows this session is connected: {PAIR}"


@dataclass(frozen=True)
class PendingCommit:
    """A request the browser paused, waiting for a paired person (``commit.check``)."""

    conn: int  # who asked: gets the commit.decided reply
    request_id: str  # the commit.check's id
    session_id: str
    request: HeldRequest
    digest: str
    mode: CommitMode


class Commits:
    """The session machine's modes and paused requests."""

    def __init__(self, core: MachineContext) -> None:
        self.core = core
        self.pending: dict[str, PendingCommit] = {}  # approval request id -> paused request

    def set_mode(self, conn: int, by: str, msg: rq.SessionMode) -> list[Effect]:
        """A paired person sets the session's mode (the server lets only such a connection
        send it); ``mode.set`` is the reply and an event to subscribers and approvers."""
        st = self.core.get(msg.session_id)
        st.mode = msg.mode
        event = ModeSet(session_id=st.header.session_id, mode=msg.mode, by=by)
        return [
            Reply(conn, event.model_copy(update={"id": msg.id})),
            Publish(st.header.session_id, event, exclude=conn, to_approvers=True),
        ]

    def check(self, conn: int, msg: rq.CommitCheck, *, approver: str | None) -> list[Effect]:
        """A request the browser paused before it left, decided by the session's mode and the
        sandbox origins: the session's owner connection asks, or a paired person's tool
        (``approver``: its label; the extension holds requests in the tabs it watches)."""
        st = self.core.get(msg.session_id)
        if conn != st.owner and approver is None:
            raise UnauthorizedError(
                "commit.check: only the session's own connection or a paired person's tool "
                f"asks about its requests; session {st.header.session_id!r} is another connection's"
            )
        req = msg.request
        digest = request_digest(req)
        target = url_origin(req.url)  # read from the URL, never from the client's `origin`
        page = url_origin(req.page_url) if req.page_url else None
        sandbox = next(
            (o for o in (target, page) if in_sandbox(o, self.core.sandbox_origins)), None
        )

        def answer(
            status: Literal["approved", "rejected"],
            decider: Decider,
            note: str,
            way_out: str | None = None,
            flagged: bool = False,
        ) -> list[Effect]:
            info = DecisionInfo(
                status=status,
                by="daemon",
                note=note,
                decider=decider,
                way_out=way_out,
                mode=st.mode,
            )
            return self.decided(conn, msg.id, st.header.session_id, req, digest, info, flagged)

        if sandbox is not None:
            note = f"{sandbox} is a sandbox origin (serve --sandbox-origin): flagged, not held"
            return answer("approved", "sandbox", note, flagged=True)
        if st.mode == "watch":
            note = "the session's mode is 'watch': it runs, flagged"
            return answer("approved", "mode", note, flagged=True)
        if st.mode == "stop":
            note = "the session's mode is 'stop': a request that commits is refused without asking"
            where = where_to_decide(self.core.places(st.header.session_id))
            way_out = f"a paired person switches this session to 'ask' or 'watch', {where}"
            return answer("rejected", "mode", note, way_out)
        allowed_by = st.allowed_origins.get(target) if target is not None else None
        if allowed_by is not None:
            note = (
                f"{target} was allowed for the rest of this session by {allowed_by}: "
                "flagged, not held"
            )
            info = DecisionInfo(
                status="approved", by=allowed_by, note=note, decider="person", mode=st.mode
            )
            return self.decided(conn, msg.id, st.header.session_id, req, digest, info, True)
        action = (req.trigger or f"{req.method} {req.url}")[:MAX_ACTION_CHARS]
        step = max(st.step, 0)
        if not self.core.person_present():
            note = (
                f"{commit_headline(req).removeprefix('Waiting for you: ')}; no person is "
                "paired and connected to decide, so the daemon refused it"
            )
            way_out = (
                f"`serve --sandbox-origin {target or '<origin>'}` (or `serve --mode watch`), "
                f"or {PAIR}"
            )
            asked, resolved = self._rows(st.header.session_id, step, action, req, note)
            return [asked, resolved, *answer("rejected", "daemon", note, way_out)]
        opened = self.core.approvals.open(st.header.session_id, step, 0, action, guarded=True)
        self.pending[opened.request_id] = PendingCommit(
            conn, msg.id, st.header.session_id, req, digest, st.mode
        )
        st.waiting_approvals += 1
        event = ApprovalRequest(
            request_id=opened.request_id,
            session_id=st.header.session_id,
            step=step,
            candidate=Candidate(thought="", action=action),
            candidate_index=None,
            reward=None,
            reason="commit",
            expires_in_s=self.core.approval_timeout_s,
            card=commit_card(
                req,
                commit_headline(req),
                why=commit_why(req, st.mode),
                step=causing_step(st, req),
                expires_at=self.core.clock() + self.core.approval_timeout_s,
            ),
        )
        return [
            ApprovalRequestedRecord(event, self.core.clock()),
            Publish(st.header.session_id, event, to_approvers=True),
            AwaitApproval(opened.request_id, self.core.approval_timeout_s),
        ]

    def _rows(
        self, session_id: str, step: int, action: str, req: HeldRequest, note: str
    ) -> tuple[ApprovalRequestedRecord, ApprovalDecidedRecord]:
        """The approval row of a paused request the daemon refused at once (nobody to ask)."""
        opened, res = self.core.approvals.refuse(session_id, step, 0, action, note)
        asked = ApprovalRequest(
            request_id=opened.request_id,
            session_id=session_id,
            step=step,
            candidate=Candidate(thought="", action=action),
            candidate_index=None,
            reward=None,
            reason="commit",
            expires_in_s=0.0,
            card=commit_card(req, commit_headline(req)),
        )
        resolved = ApprovalResolved(
            request_id=opened.request_id,
            session_id=session_id,
            decision="reject",
            by=res.by,
            note=note,
        )
        return (
            ApprovalRequestedRecord(asked, self.core.clock()),
            ApprovalDecidedRecord(resolved, res.status, self.core.clock()),
        )

    def decided(
        self,
        conn: int,
        rid: str,
        session_id: str,
        req: HeldRequest,
        digest: str,
        decision: DecisionInfo,
        flagged: bool,
    ) -> list[Effect]:
        """``commit.decided``: the requester's reply, and an event to the session's owner,
        subscribers and approvers (logged with the session's events)."""
        event = CommitDecided(
            session_id=session_id,
            request=req,
            request_digest=digest,
            decision=decision,
            flagged=flagged,
        )
        return [
            Reply(conn, event.model_copy(update={"id": rid})),
            Publish(session_id, event, exclude=conn, to_approvers=True),
        ]
