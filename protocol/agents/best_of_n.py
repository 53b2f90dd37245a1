"""Reward-guided best-of-n (Web-Shepherd, Appendix F.2) as one call.

The policy samples N answers (duplicates expected). The ``top_n`` most frequent actions
(counted after normalising whitespace and quote style) become the candidates, scored in
one ``score`` request; the highest reward wins, ties go to the action sampled more often,
then to the one proposed first. A candidate without a reward (no label parsed) ranks
below every scored one. The daemon's approval decision is honoured: approved → as chosen,
edited → the person's action, rejected (or a timeout that rejects) → ``rejected``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from webshepherd.protocol.client.session import CandidateLike, to_candidates
from webshepherd.protocol.common import Candidate, DecisionInfo, GuardHit, Observation
from webshepherd.protocol.replies import Scored

if TYPE_CHECKING:
    from webshepherd.protocol.client.session import SessionHandle
    from webshepherd.protocol.client.sync import SyncSession

Approval = Literal["auto", "always", "never"]


def action_key(action: str) -> str:
    """The action with whitespace and quote style normalised (for counting duplicates)."""
    text = action.strip()
    try:
        node = ast.parse(text, mode="eval").body
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            args = [repr(ast.literal_eval(a)) for a in node.args]
            args += [f"{k.arg}={ast.literal_eval(k.value)!r}" for k in node.keywords]
            return f"{node.func.id}({', '.join(args)})"
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        pass  # not a call, or nested deeper than the parser holds: keyed as text
    return re.sub(r"\s+", " ", text.replace('"', "'"))


@dataclass(frozen=True)
class Group:
    """One distinct action among the proposals."""

    candidate: Candidate  # its first proposal (thought and action as proposed)
    count: int  # how many proposals had this action
    first: int  # index of its first proposal


def group_proposals(proposals: Sequence[CandidateLike], top_n: int | None = None) -> list[Group]:
    """Distinct actions, most frequent first (ties: proposed first), at most ``top_n``."""
    groups: dict[str, list[Any]] = {}
    for i, cand in enumerate(to_candidates(proposals)):
        key = action_key(cand.action)
        if key in groups:
            groups[key][1] += 1
        else:
            groups[key] = [cand, 1, i]
    ranked = sorted(
        (Group(c, n, i) for c, n, i in groups.values()), key=lambda g: (-g.count, g.first)
    )
    return ranked if top_n is None else ranked[: max(1, top_n)]


def select(rewards: Sequence[float | None], counts: Sequence[int], firsts: Sequence[int]) -> int:
    """Index of the best candidate: highest reward, then most proposed, then proposed first.

    A ``None`` reward ranks below every number.
    """
    if not rewards:
        raise ValueError("no candidate to select from")

    def rank(i: int) -> tuple[bool, float, int, int]:
        r = rewards[i]
        return (r is not None, r if r is not None else 0.0, counts[i], -firsts[i])

    return max(range(len(rewards)), key=rank)


@dataclass(frozen=True)
class BestOfN:
    """What best-of-n chose and why."""

    candidates: list[Candidate]  # the scored candidates, most frequent first
    counts: list[int]  # proposals per candidate
    rewards: list[float | None]  # per candidate, in the same order
    index: int  # the reward-guided pick among ``candidates``
    scored: Scored  # the daemon's reply
    chosen: Candidate | None  # what to execute: the pick, the person's edit, or None
    reward: float | None  # reward of the pick

    @property
    def decision(self) -> DecisionInfo:
        return self.scored.decision

    @property
    def rejected(self) -> bool:
        """A person rejected the action (or a timeout rejected it): the caller re-plans."""
        return self.chosen is None

    @property
    def guard(self) -> list[GuardHit]:
        """The guard rules the daemon held the pick for (empty: none). With ``rejected``
        and ``decision.by == 'daemon'``, nobody was connected to decide and it was refused."""
        return self.scored.decision.guard

    @property
    def edited(self) -> bool:
        return self.scored.decision.status == "edited"

    @property
    def feedback(self) -> str:
        return self.scored.results[self.index].feedback if self.scored.results else ""


def decide(candidates: Sequence[Candidate], pick: int, decision: DecisionInfo) -> Candidate | None:
    """The candidate to execute under the daemon's decision (None: rejected)."""
    if decision.status == "auto":
        return candidates[pick]
    if decision.action is None:  # rejected, or a timeout whose default is reject
        return None
    if decision.status == "edited":
        return Candidate(thought=candidates[pick].thought, action=decision.action)
    index = decision.index if decision.index is not None else pick
    if 0 <= index < len(candidates) and candidates[index].action == decision.action:
        return candidates[index]
    return Candidate(thought=candidates[pick].thought, action=decision.action)


def result_from(groups: Sequence[Group], scored: Scored) -> BestOfN:
    """Combine the scored reply with the proposal counts."""
    by_index = {r.index: r.reward for r in scored.results}
    rewards = [by_index.get(i) for i in range(len(groups))]
    counts = [g.count for g in groups]
    pick = select(rewards, counts, [g.first for g in groups])
    candidates = [g.candidate for g in groups]
    return BestOfN(
        candidates=candidates,
        counts=counts,
        rewards=rewards,
        index=pick,
        scored=scored,
        chosen=decide(candidates, pick, scored.decision),
        reward=rewards[pick],
    )


async def best_of_n(
    session: SessionHandle,
    proposals: Sequence[CandidateLike],
    *,
    top_n: int = 5,
    samples: int | None = None,
    approval: Approval = "auto",
    observation: Observation | dict[str, Any] | None = None,
    timeout: float | None = None,
) -> BestOfN:
    """Score the ``top_n`` most frequent proposals in one request and pick the best.

    Candidates go to the daemon most frequent first, so its own ``best`` (ties: the
    earlier candidate), which an approval request shows a person, is this pick.
    """
    groups = group_proposals(proposals, top_n)
    if not groups:
        raise ValueError("best_of_n needs at least one proposal")
    scored = await session.score(
        [g.candidate for g in groups],
        observation,
        samples=samples,
        approval=approval,
        timeout=timeout,
    )
    return result_from(groups, scored)


def best_of_n_sync(
    session: SyncSession,
    proposals: Sequence[CandidateLike],
    *,
    top_n: int = 5,
    samples: int | None = None,
    approval: Approval = "auto",
    observation: Observation | dict[str, Any] | None = None,
    timeout: float | None = None,
) -> BestOfN:
    """Blocking :func:`best_of_n` for a :class:`~webshepherd.protocol.client.sync.SyncSession`."""
    return session.client._run(
        best_of_n(
            session.aio,
            proposals,
            top_n=top_n,
            samples=samples,
            approval=approval,
            observation=observation,
            timeout=timeout,
        )
    )
