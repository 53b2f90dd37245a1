"""Scored steps: a score job's result becomes the ``scored`` reply and event, a step refused at
once (the guard with nobody to decide, or the session's 'stop' mode) or one held for a
person (an approval request); the guard rules' hits become the step's predictions."""

from __future__ import annotations

from dataclasses import dataclass, field

from webshepherd.daemon.engine.types import StepScore
from webshepherd.daemon.records.approvals import ApprovalDecidedRecord, ApprovalRequestedRecord
from webshepherd.daemon.records.scores import ScoreDecisionRecord, ScoreRecord
from webshepherd.daemon.sessions import convert
from webshepherd.daemon.sessions.approvals import approval_reason
from webshepherd.daemon.sessions.cards import approval_card
from webshepherd.daemon.sessions.context import MachineContext
from webshepherd.daemon.sessions.effects import (
    AwaitApproval,
    Effect,
    Publish,
    RunScore,
    reply_and_publish,
)
from webshepherd.daemon.sessions.guards import (
    coordinate_notes,
    guard_hits,
)
from webshepherd.daemon.sessions.modes import (
    PAIR,
    STOP_WAY_OUT,
    in_sandbox,
    step_headline,
)
from webshepherd.protocol.actions import ActionError, parse_action
from webshepherd.protocol.commits import url_origin
from webshepherd.protocol.common import (
    ApprovalReason,
    Decider,
    DecisionInfo,
    GuardHit,
    Prediction,
    Timing,
)
from webshepherd.protocol.progress import item_levels
from webshepherd.protocol.replies import (
    ApprovalRequest,
    ApprovalResolved,
    Scored,
)

__all__ = ["PendingScore", "Scoring"]


@dataclass
class PendingScore:
    """A scored step waiting for a human decision (``best``: the candidate asked about)."""

    job: RunScore
    score: ScoreRecord
    best: int
    guard: list[GuardHit] = field(default_factory=list)  # the guard rules it met
    guarded: list[int] = field(default_factory=list)  # every candidate a guard rule holds
    predicted: list[Prediction] | None = None  # every candidate's hits (scored.predicted)


def _bid_of(action: str) -> str | None:
    """The bid an action string names, if it parses."""
    try:
        return parse_action(action).bid
    except ActionError:
        return None


class Scoring:
    """The session machine's scoring (``SessionCore.score_done``)."""

    def __init__(self, core: MachineContext) -> None:
        self.core = core
        self.pending: dict[str, PendingScore] = {}  # approval request id -> held step

    def done(self, job: RunScore, result: StepScore, timing: Timing) -> list[Effect]:
        st = self.core.sessions[job.session_id]
        candidates = list(job.input.candidates)  # the client's, as the request carried them
        results = [convert.candidate_result(c) for c in result.candidates]
        best = convert.best_index(results)
        best_reward = results[best].reward if best is not None else None
        st.remember_candidates(
            job.step,
            [(c.action, r.reward) for c, r in zip(candidates, results, strict=False)],
        )
        st.remember_progress(
            job.step,
            [
                (c.action, item_levels(r.items))
                for c, r in zip(candidates, results, strict=False)
                if r.items
            ],
        )
        index = best if best is not None else 0
        hits = {i: h for i in range(len(candidates)) if (h := self._hits(job, i))}
        unread = {  # coordinate calls whose target no box names (guards.coordinate_notes)
            i: n for i, c in enumerate(candidates) if (n := coordinate_notes(c.action, job.boxes))
        }
        predicted = [
            Prediction(index=i, hits=hits.get(i, []), notes=unread.get(i, [])[:16])
            for i in sorted(hits.keys() | unread.keys())
        ] or None
        # the rules hold only where no browser gate does, off the sandbox, outside 'watch'
        sandboxed = in_sandbox(url_origin(job.input.current_url), self.core.sandbox_origins)
        rules_hold = st.holds is None and not sandboxed and st.mode != "watch"
        guard = hits.get(index, []) if rules_hold else []
        guarded = sorted(hits) if rules_hold else []
        present = self.core.person_present()
        previous = st.previous_reward(job.step)
        reason = approval_reason(
            job.approval,
            best_reward,
            previous,
            self.core.policy,
            person_present=present,
            guarded=bool(guard),
        )
        unheld: Decider | None = None  # who let a step the rules or the reward met run
        if st.holds is None and hits.get(index) and not guard:
            unheld = "sandbox" if sandboxed else "mode" if st.mode == "watch" else None
        if reason in ("below_threshold", "reward_drop") and st.mode == "watch":
            reason, unheld = None, "mode"  # watching: a reward never turns a step into a wait
        if best_reward is not None:
            st.step_rewards[job.step] = best_reward
            st.set_reward(best_reward)
        score = ScoreRecord(
            session_id=job.session_id,
            request_id=job.request_id,
            step=job.step,
            samples=job.input.samples,
            approval=job.approval,
            candidates=candidates,
            results=results,
            best=best,
            timing=timing,
            created_at=self.core.clock(),
            latest_reward=st.header.latest_reward,
        )
        if reason is None:
            action = score.candidates[best].action if best is not None else None
            decision = DecisionInfo(
                status="auto", index=best, action=action, decider=unheld, mode=st.mode
            )
            return [score, *self.scored(job, score, best, decision, guarded, predicted)]
        cand = score.candidates[index]
        why = self._why(reason, guard, best_reward, previous)
        if st.mode == "stop":
            note = f"{why}; the session's mode is 'stop', so it was refused without asking"
            return [
                score,
                *self._refuse(
                    job, score, index, reason, guard, guarded, predicted,
                    note=note, decider="mode", way_out=STOP_WAY_OUT,
                ),
            ]  # fmt: skip
        if guard and not present:
            rules = " ".join(f"--no-guard {h.rule}" for h in guard)
            page = url_origin(job.input.current_url) or "<origin>"
            note = f"{why}; no person is connected to decide, so the guard refused it"
            way_out = (
                f"`serve {rules}` (that rule off), `serve --sandbox-origin {page}` (a sandbox "
                f"site: flagged, not held), or {PAIR}"
            )
            return [
                score,
                *self._refuse(
                    job, score, index, reason, guard, guarded, predicted,
                    note=note, decider="guard", way_out=way_out,
                ),
            ]  # fmt: skip
        req = self.core.approvals.open(
            job.session_id, job.step, index, cand.action, guarded=bool(guard)
        )
        self.pending[req.request_id] = PendingScore(job, score, index, guard, guarded, predicted)
        st.waiting_approvals += 1
        facts = (job.elements or {}).get(_bid_of(cand.action) or "")
        card = approval_card(
            candidates,
            results,
            index,
            axtree=job.input.axtree,
            boxes=job.boxes,
            elements=job.elements,
            screenshot=job.input.screenshot,
            screenshot_mime=job.input.screenshot_mime,
            predicts=hits.get(index, []),
        )
        headline = step_headline(
            reason,
            guard,
            reward=results[index].reward,
            threshold=self.core.policy.threshold,
            previous=previous,
            facts=facts,
            destination=card.destination,
        )
        card = card.model_copy(update={"headline": headline[:1024]})
        event = ApprovalRequest(
            request_id=req.request_id,
            session_id=job.session_id,
            step=job.step,
            candidate=cand,
            candidate_index=index,
            reward=results[index].reward,
            feedback=results[index].feedback,
            reason=reason,
            expires_in_s=self.core.approval_timeout_s,
            guard=guard,
            threshold=self.core.policy.threshold,
            card=card,
        )
        return [
            score,
            ApprovalRequestedRecord(event, self.core.clock()),
            Publish(job.session_id, event, to_approvers=True),
            AwaitApproval(req.request_id, self.core.approval_timeout_s),
        ]

    def _why(
        self,
        reason: ApprovalReason,
        guard: list[GuardHit],
        reward: float | None,
        previous: float | None,
    ) -> str:
        """Why a step would wait for a person, in words (a refusal's note starts with it)."""
        if guard:
            rules = ", ".join(h.rule for h in guard)
            return f"guarded ({rules}): {'; '.join(h.detail for h in guard)}"
        shown = "none parsed" if reward is None else f"{reward:.3f}"
        if reason == "below_threshold":
            return f"the best reward ({shown}) is below the approval threshold"
        if reason == "reward_drop":
            return f"the best reward ({shown}) fell from the previous step's ({previous})"
        return "the score asked for approval (approval='always')"

    def _refuse(
        self,
        job: RunScore,
        score: ScoreRecord,
        index: int,
        reason: ApprovalReason,
        guard: list[GuardHit],
        guarded: list[int],
        predicted: list[Prediction] | None,
        *,
        note: str,
        decider: Decider,
        way_out: str,
    ) -> list[Effect]:
        """A step refused at once, not held until a timeout (the guard with nobody connected
        to decide, or the session's 'stop' mode), never approved silently. Recorded as an
        approval request rejected by the daemon, so the recording keeps why."""
        note = note[:4000]
        cand, result = score.candidates[index], score.results[index]
        req, res = self.core.approvals.refuse(job.session_id, job.step, index, cand.action, note)
        asked = ApprovalRequest(
            request_id=req.request_id,
            session_id=job.session_id,
            step=job.step,
            candidate=cand,
            candidate_index=index,
            reward=result.reward,
            feedback=result.feedback,
            reason=reason,
            expires_in_s=0.0,
            guard=guard,
        )
        resolved = ApprovalResolved(
            request_id=req.request_id,
            session_id=job.session_id,
            decision="reject",
            by=res.by,
            note=note,
        )
        decision = DecisionInfo(
            status="rejected",
            index=index,
            action=None,
            by=res.by,
            note=note,
            guard=guard,
            decider=decider,
            way_out=way_out[:1024],
            mode=self.core.sessions[job.session_id].mode,
        )
        return [
            ApprovalRequestedRecord(asked, self.core.clock()),
            ApprovalDecidedRecord(resolved, res.status, self.core.clock()),
            *self.scored(job, score, index, decision, guarded, predicted),
        ]

    def _hits(self, job: RunScore, index: int) -> list[GuardHit]:
        """The guard rules candidate ``index`` of ``job`` meets on the step's page."""
        return guard_hits(
            self.core.guards,
            job.input.candidates[index].action,
            url=job.input.current_url,
            axtree=job.input.axtree,
            elements=job.elements,
            origin=job.origin,
            boxes=job.boxes,
            commits=self.core.commit_patterns,
        )

    def scored(
        self,
        job: RunScore,
        score: ScoreRecord,
        best: int | None,
        decision: DecisionInfo,
        guarded: list[int],
        predicted: list[Prediction] | None = None,
    ) -> list[Effect]:
        """The ``scored`` reply and event; ``guarded``: the candidates that meet a guard rule
        (an agent that runs one other than the held best, as tree search does, asks for it
        first by scoring it alone); ``predicted``: every candidate's hits."""
        event = Scored(
            session_id=job.session_id,
            step=job.step,
            results=score.results,
            best=best,
            decision=decision,
            timing=score.timing,
            candidates=score.candidates,
            guarded=guarded or None,
            predicted=predicted,
        )
        return [
            ScoreDecisionRecord(job.request_id, event),
            # the requester's reply carries no echo of the candidates (it sent them)
            *reply_and_publish(
                job.conn, job.request_id, job.session_id, event, {"candidates": None}
            ),
        ]
