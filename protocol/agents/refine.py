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

from webshepherd.protocol.agents.best_of_n import Approval, action_key, decide, select
from webshepherd.protocol.agents.environment import PageState
from webshepherd.protocol.agents.policy import PolicyContext, RefineRequest, as_policy
from webshepherd.protocol.common import Candidate, CandidateResult, DecisionInfo
from webshepherd.protocol.replies import Scored

if TYPE_CHECKING:
    from webshepherd.protocol.client.session import SessionHandle
    from webshepherd.protocol.client.sync import SyncSession

_LABELS = {"yes": "Yes", "in_progress": "In Progress", "no": "No"}


def feedback_for_policy(result: CandidateResult) -> str:
    """The judge's feedback paragraph and its checklist evaluation, without any score."""
    lines = []
    for it in result.items:
        lines.append(f"Checklist {it.index}: {_LABELS[it.likeliest]}")
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


class Rounds:
    """The refinement rounds as plain data (no I/O): feed each scored candidate to :meth:`add`,
    ask :attr:`go` whether to refine again, and :attr:`kept` for the final choice."""

    def __init__(
        self,
        draft: Candidate,
        reward: float | None,
        feedback: str,
        previous_reward: float | None,
        max_rounds: int = 2,
        force: bool = False,
    ) -> None:
        self.candidates = [draft]
        self.rewards = [reward]
        self.feedback = [feedback]
        self.max_rounds = max_rounds
        self.go = (force or should_refine(reward, previous_reward)) and max_rounds > 0

    @property
    def rounds(self) -> int:
        return len(self.candidates) - 1

    @property
    def draft(self) -> Candidate:
        """The candidate the next round refines (the latest one)."""
        return self.candidates[-1]

    def add(self, refined: Candidate, reward: float | None, feedback: str) -> None:
        """A refined candidate and its reward; refining goes on while the reward improves."""
        self.candidates.append(refined)
        self.rewards.append(reward)
        self.feedback.append(feedback)
        self.go = improved(reward, self.rewards[-2]) and self.rounds < self.max_rounds

    def stop(self) -> None:
        """The policy gave nothing new: no further round."""
        self.go = False

    @property
    def kept(self) -> int:
        """The highest reward among the candidates (ties: the earlier one)."""
        n = len(self.candidates)
        return select(self.rewards, [1] * n, list(range(n)))


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
    force: bool = False,
) -> Refinement:
    """Refine ``draft`` (scored as ``result``) while its reward is below ``previous_reward``
    (``force``: refine whatever the reward, e.g. after the daemon's ``stalled`` signal)."""
    pol = as_policy(policy)
    book = Rounds(
        draft, result.reward, feedback_for_policy(result), previous_reward, max_rounds, force
    )
    if not pol.can_refine:
        book.stop()
    replies: list[Scored] = []
    while book.go:
        request = RefineRequest(
            context.intent,
            state,
            context.history,
            book.draft,
            book.feedback[-1],
            round=book.rounds + 1,
            plan=context.plan,
        )
        refined = await pol.refine(request)
        if refined is None or action_key(refined.action) == action_key(book.draft.action):
            book.stop()
            break
        scored = await session.score(
            [refined], None, samples=samples, approval="never", timeout=timeout
        )
        replies.append(scored)
        book.add(refined, scored.results[0].reward, feedback_for_policy(scored.results[0]))
    keep = book.kept
    candidates = book.candidates
    decision = DecisionInfo(status="auto", index=keep, action=candidates[keep].action)
    chosen: Candidate | None = candidates[keep]
    if approval != "never":
        gate = await session.score(
            [candidates[keep]], None, samples=samples, approval=approval, timeout=timeout
        )
        replies.append(gate)
        chosen = decide([candidates[keep]], 0, gate.decision.model_copy(update={"index": 0}))
        decision = gate.decision.model_copy(update={"index": keep})
    return Refinement(candidates, book.rewards, book.feedback, keep, chosen, decision, replies)


def refine_sync(session: SyncSession, policy: Any, *args: Any, **kwargs: Any) -> Refinement:
    """Blocking :func:`refine` for a :class:`~webshepherd.protocol.client.sync.SyncSession`."""
    return session.client._run(refine(session.aio, policy, *args, **kwargs))
