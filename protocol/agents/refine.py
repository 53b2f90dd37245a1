"""Refinement (Web-Shepherd, Appendix F.2 "Refinement experiments") as one call.

When the chosen action's reward is lower than the previous step's, the reward model's
feedback (its thought and checklist evaluation, without the reward) goes back to the
policy with the paper's refinement prompt; the refined action is scored, and this
repeats up to ``max_rounds`` (2) times as long as the reward improves. Of the (up to 3)
candidates, the one with the highest reward is kept (ties: the earlier one).

Approval: the exploration rounds are scored with ``approval="never"``; when the caller
asks for approval, the kept candidate alone is scored once more under that mode, so a
person decides on the action that would really run (one extra score request per step).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..common import Candidate, CandidateResult, DecisionInfo
from ..replies import Scored
from .best_of_n import Approval, action_key, decide, select
from .environment import PageState
from .policy import PolicyContext, RefineRequest, as_policy

if TYPE_CHECKING:
    from ..client_session import SessionHandle
    from ..client_sync import SyncSession

_LABELS = {"yes": "Yes", "in_progress": "In Progress", "no": "No"}


def feedback_for_policy(result: CandidateResult) -> str:
    """The judge's feedback paragraph and its checklist evaluation, without any score."""
    lines = []
    for it in result.items:
        probs = {"yes": it.yes, "in_progress": it.in_progress, "no": it.no}
        lines.append(f"Checklist {it.index}: {_LABELS[max(probs, key=lambda k: probs[k])]}")
    parts = [result.feedback.strip(), "\n".join(lines)]
    return "\n\n".join(p for p in parts if p)


def should_refine(reward: float | None, previous_reward: float | None) -> bool:
    """Refine when the reward fell below the previous step's (no reward counts as lower)."""
    if previous_reward is None:
        return False
    return reward is None or reward < previous_reward


def improved(new: float | None, old: float | None) -> bool:
    """Whether a refined candidate's reward beats its draft's."""
    return new is not None and (old is None or new > old)


@dataclass(frozen=True)
class Refinement:
    """The candidates refinement went through and the one kept."""

    candidates: list[Candidate]  # the draft, then each refined action
    rewards: list[float | None]
    feedback: list[str]  # what each candidate's feedback to the policy was
    index: int  # the kept candidate
    chosen: Candidate | None  # what to execute (the person's edit; None if rejected)
    decision: DecisionInfo
    scored: list[Scored] = field(default_factory=list)  # every score reply of this call

    @property
    def rounds(self) -> int:
        return len(self.candidates) - 1

    @property
    def reward(self) -> float | None:
        return self.rewards[self.index]

    @property
    def rejected(self) -> bool:
        return self.chosen is None


async def refine(
    session: SessionHandle,
    policy: Any,
    state: PageState,
    context: PolicyContext,
    draft: Candidate,
    result: CandidateResult,
    previous_reward: float | None,
    *,
    max_rounds: int = 2,
    samples: int | None = None,
    approval: Approval = "auto",
    timeout: float | None = None,
) -> Refinement:
    """Refine ``draft`` (scored as ``result``) while its reward is below ``previous_reward``."""
    pol = as_policy(policy)
    candidates, rewards = [draft], [result.reward]
    feedback = [feedback_for_policy(result)]
    replies: list[Scored] = []
    go = should_refine(result.reward, previous_reward) and pol.can_refine
    while go and len(candidates) <= max_rounds:
        request = RefineRequest(
            context.intent,
            state,
            context.history,
            candidates[-1],
            feedback[-1],
            round=len(candidates),
            plan=context.plan,
        )
        refined = await pol.refine(request)
        if refined is None or action_key(refined.action) == action_key(candidates[-1].action):
            break
        scored = await session.score(
            [refined], None, samples=samples, approval="never", timeout=timeout
        )
        replies.append(scored)
        new = scored.results[0]
        candidates.append(refined)
        rewards.append(new.reward)
        feedback.append(feedback_for_policy(new))
        go = improved(new.reward, rewards[-2])
    n = len(candidates)
    keep = select(rewards, [1] * n, list(range(n)))
    decision = DecisionInfo(status="auto", index=keep, action=candidates[keep].action)
    chosen: Candidate | None = candidates[keep]
    if approval != "never":
        gate = await session.score(
            [candidates[keep]], None, samples=samples, approval=approval, timeout=timeout
        )
        replies.append(gate)
        decision = gate.decision
        chosen = decide([candidates[keep]], 0, decision.model_copy(update={"index": 0}))
        decision = decision.model_copy(update={"index": keep})
    return Refinement(candidates, rewards, feedback, keep, chosen, decision, replies)


def refine_sync(session: SyncSession, policy: Any, *args: Any, **kwargs: Any) -> Refinement:
    """Blocking :func:`refine` for a :class:`~webshepherd.protocol.client_sync.SyncSession`."""
    return session.client._run(refine(session.aio, policy, *args, **kwargs))
