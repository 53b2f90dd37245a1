"""Scoring and approvals of the session machine: ``score`` asks for an engine job,
``score_done`` answers it or opens an approval request, and ``decide`` / ``expire`` resolve
that request. A mixin of :class:`~.machine.SessionCore` (sans-I/O like it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from webshepherd.daemon.engine.types import StepScore
from webshepherd.daemon.sessions import convert
from webshepherd.daemon.sessions.approvals import (
    ApprovalBook,
    ApprovalPolicy,
    Resolution,
    approval_reason,
)
from webshepherd.daemon.sessions.effects import (
    AwaitApproval,
    Effect,
    Publish,
    Record,
    Reply,
    Resolved,
    RunScore,
    reply_and_publish,
)
from webshepherd.daemon.sessions.state import SessionState
from webshepherd.protocol import requests as rq
from webshepherd.protocol.common import (
    Candidate,
    CandidateResult,
    DecisionInfo,
    Observation,
    Timing,
)
from webshepherd.protocol.errors import ProtocolError
from webshepherd.protocol.replies import ApprovalRequest, ApprovalResolved, Scored


@dataclass
class PendingScore:
    """A scored step waiting for a human decision."""

    job: RunScore
    results: list[CandidateResult]
    best: int
    timing: Timing


class ScoringAndApprovals:
    """The score and approval requests of :class:`~.machine.SessionCore`."""

    policy: ApprovalPolicy
    default_samples: int
    approval_timeout_s: float
    clock: Callable[[], float]
    sessions: dict[str, SessionState]
    approvals: ApprovalBook
    _pending: dict[str, PendingScore]

    if TYPE_CHECKING:  # provided by SessionCore

        def get(self, session_id: str, *, open_only: bool = True) -> SessionState: ...
        def _observe(
            self, st: SessionState, obs: Observation, conn: int | None, rid: str | None = None
        ) -> list[Effect]: ...

    # -- score -----------------------------------------------------------
    def score(self, conn: int, msg: rq.Score) -> list[Effect]:
        st = self.get(msg.session_id)
        out: list[Effect] = []
        if msg.observation is not None:
            out += self._observe(st, msg.observation, conn=None)
        if st.axtree is None or st.url is None:
            raise ProtocolError(
                "observation: the session has no observation yet; send observe first "
                "or put one inline in score"
            )
        out.append(
            RunScore(
                st.session_id,
                conn,
                msg.id,
                st.step,
                st.intent,
                st.url,
                st.axtree,
                tuple(st.history),
                tuple(convert.candidate_action(c) for c in msg.candidates),
                msg.samples or self.default_samples,
                msg.approval,
            )
        )
        return out

    def score_done(self, job: RunScore, result: StepScore, timing: Timing) -> list[Effect]:
        st = self.sessions[job.session_id]
        results = [convert.candidate_result(c) for c in result.candidates]
        best = convert.best_index(results)
        best_reward = results[best].reward if best is not None else None
        st.remember_candidates(
            job.step,
            [(c.action, r.reward) for c, r in zip(job.candidates, results, strict=False)],
        )
        reason = approval_reason(
            job.approval, best_reward, st.previous_reward(job.step), self.policy
        )
        if best_reward is not None:
            st.step_rewards[job.step] = best_reward
            st.latest_reward = best_reward
        out: list[Effect] = [
            Record(
                "score",
                {
                    "session_id": job.session_id,
                    "request_id": job.request_id,
                    "step": job.step,
                    "samples": job.samples,
                    "approval": job.approval,
                    "candidates": [
                        {"thought": c.thought, "action": c.action} for c in job.candidates
                    ],
                    "results": [r.model_dump() for r in results],
                    "best": best,
                    "queue_ms": timing.queue_ms,
                    "model_ms": timing.model_ms,
                    "created_at": self.clock(),
                    "latest_reward": st.latest_reward,
                },
            )
        ]
        if reason is None:
            idx = best
            action = job.candidates[idx].action if idx is not None else None
            return out + self._scored(
                job, results, best, timing, DecisionInfo(status="auto", index=idx, action=action)
            )
        index = best if best is not None else 0
        cand = job.candidates[index]
        req = self.approvals.open(job.session_id, job.step, index, cand.action)
        self._pending[req.request_id] = PendingScore(job, results, index, timing)
        st.waiting_approvals += 1
        reward = results[index].reward
        event = ApprovalRequest(
            request_id=req.request_id,
            session_id=job.session_id,
            step=job.step,
            candidate=Candidate(thought=cand.thought, action=cand.action),
            candidate_index=index,
            reward=reward,
            feedback=results[index].feedback,
            reason=reason,
            expires_in_s=self.approval_timeout_s,
        )
        return [
            *out,
            Record(
                "approval_requested",
                {
                    "request_id": req.request_id,
                    "session_id": job.session_id,
                    "step": job.step,
                    "candidate_index": index,
                    "reward": reward,
                    "reason": reason,
                    "feedback": results[index].feedback,
                    "created_at": self.clock(),
                },
            ),
            Publish(job.session_id, event, to_approvers=True),
            AwaitApproval(req.request_id, self.approval_timeout_s),
        ]

    def _scored(
        self,
        job: RunScore,
        results: list[CandidateResult],
        best: int | None,
        timing: Timing,
        decision: DecisionInfo,
    ) -> list[Effect]:
        event = Scored(
            session_id=job.session_id,
            step=job.step,
            results=results,
            best=best,
            decision=decision,
            timing=timing,
            candidates=[Candidate(thought=c.thought, action=c.action) for c in job.candidates],
        )
        return [
            Record(
                "score_decision",
                {
                    "session_id": job.session_id,
                    "request_id": job.request_id,
                    "decision": decision.model_dump(),
                },
            ),
            # the requester's reply carries no echo of the candidates (it sent them)
            *reply_and_publish(
                job.conn, job.request_id, job.session_id, event, {"candidates": None}
            ),
        ]

    # -- approvals -------------------------------------------------------
    def decide(self, conn: int, by: str, msg: rq.ApprovalDecide) -> list[Effect]:
        res = self.approvals.decide(msg.request_id, msg.decision, msg.action, by, msg.note)
        return self._resolved(res, conn, msg.id)

    def close_orphaned_approvals(self, open_: list[tuple[str, str]]) -> list[Effect]:
        """``(request_id, session_id)`` of approval requests a restart left open: the
        ``scored`` reply that waited for them died with the daemon, so they are closed as
        ``timeout`` by ``daemon``, recorded, and logged as ``approval.resolved`` events (the
        waiting client reads it with ``session.get``, approvers see no stale request)."""
        out: list[Effect] = []
        note = "the daemon restarted before anyone decided; score the step again to ask again"
        for request_id, session_id in open_:
            out.append(
                Record(
                    "approval_decided",
                    {
                        "request_id": request_id,
                        "decision": "timeout",
                        "status": "timeout",
                        "action": None,
                        "by": "daemon",
                        "note": note,
                        "decided_at": self.clock(),
                    },
                )
            )
            event = ApprovalResolved(
                request_id=request_id,
                session_id=session_id,
                decision="timeout",
                by="daemon",
                note=note,
            )
            out.append(Publish(session_id, event, to_approvers=True))
        return out

    def expire(self, request_id: str) -> list[Effect]:
        res = self.approvals.expire(request_id)
        return [] if res is None else self._resolved(res, None, None)

    def _resolved(self, res: Resolution, conn: int | None, rid: str | None) -> list[Effect]:
        pending = self._pending.pop(res.request_id)
        st = self.sessions[res.session_id]
        st.waiting_approvals = max(0, st.waiting_approvals - 1)
        event = ApprovalResolved(
            request_id=res.request_id,
            session_id=res.session_id,
            decision=res.decision,
            action=res.action,
            by=res.by,
            note=res.note,
        )
        out: list[Effect] = [
            Record(
                "approval_decided",
                {
                    "request_id": res.request_id,
                    "decision": res.decision,
                    "status": res.status,
                    "action": res.action,
                    "by": res.by,
                    "note": res.note,
                    "decided_at": self.clock(),
                },
            ),
            Publish(res.session_id, event, to_approvers=True, exclude=conn),
        ]
        if conn is not None and rid is not None:
            out.append(Reply(conn, event.model_copy(update={"id": rid})))
        out.append(Resolved(res.request_id))
        decision = DecisionInfo(
            status=res.status,
            index=pending.best,
            action=res.action if res.approved else None,
            by=res.by,
            note=res.note,
        )
        return out + self._scored(
            pending.job, pending.results, pending.best, pending.timing, decision
        )
