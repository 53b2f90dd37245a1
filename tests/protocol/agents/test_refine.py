"""Refinement: the rounds on plain data, the feedback the policy gets, and a real daemon."""

from __future__ import annotations

import asyncio

import pytest
from webshepherd.protocol import Candidate, CandidateResult, ItemProbs, Observation
from webshepherd.protocol.agents import PageState, PolicyContext, RefineRequest, refine
from webshepherd.protocol.agents.refine import Rounds, feedback_for_policy, should_refine
from webshepherd.protocol.client import AsyncClient

from tests.fixtures.daemon import TEST_TOKEN, DaemonHandle

DRAFT = Candidate(thought="Deals may be cheaper.", action="click('40')")


def c(i: int) -> Candidate:
    return Candidate(thought=f"try {i}", action=f"click('{i}')")


def test_refinement_starts_only_below_the_previous_steps_reward() -> None:
    assert should_refine(0.4, 0.5) and should_refine(None, 0.5)
    assert not should_refine(0.5, 0.5) and not should_refine(0.6, 0.5)
    assert not should_refine(0.1, None)  # the first step has nothing to compare with


def test_two_rounds_at_most_and_the_best_is_kept() -> None:
    book = Rounds(DRAFT, 0.1, "fb0", previous_reward=0.9)
    assert book.go
    book.add(c(1), 0.2, "fb1")
    assert book.go and book.draft == c(1)  # improved: refine the refined one
    book.add(c(2), 0.3, "fb2")
    assert not book.go and book.rounds == 2  # still improving, but two rounds is the cap
    assert book.kept == 2 and book.feedback == ["fb0", "fb1", "fb2"]


def test_refining_stops_when_the_reward_does_not_improve() -> None:
    book = Rounds(DRAFT, 0.3, "fb0", previous_reward=0.9)
    book.add(c(1), 0.25, "fb1")
    assert not book.go and book.rounds == 1 and book.kept == 0  # the draft stays best
    tie = Rounds(DRAFT, 0.3, "fb0", previous_reward=0.9)
    tie.add(c(1), 0.3, "fb1")
    assert not tie.go and tie.kept == 0  # equal is no improvement; ties keep the earlier
    none = Rounds(DRAFT, None, "fb0", previous_reward=0.9)
    none.add(c(1), None, "fb1")
    assert not none.go and none.kept == 0
    up = Rounds(DRAFT, None, "fb0", previous_reward=0.9)
    up.add(c(1), 0.0, "fb1")
    assert up.go and up.kept == 1  # any reward improves on none


def test_no_round_without_a_drop() -> None:
    assert not Rounds(DRAFT, 0.7, "fb", previous_reward=0.5).go
    assert not Rounds(DRAFT, 0.1, "fb", previous_reward=0.5, max_rounds=0).go


def test_feedback_holds_the_thought_and_checklist_evaluation_but_no_score() -> None:
    result = CandidateResult(
        index=0,
        reward=0.4125,
        items=[
            ItemProbs(index=1, yes=0.7, in_progress=0.2, no=0.1),
            ItemProbs(index=2, yes=0.1, in_progress=0.3, no=0.6),
            ItemProbs(index=3, yes=0.2, in_progress=0.5, no=0.3),
        ],
        feedback="The agent clicked deals instead of searching.",
        parsed_samples=1,
    )
    assert feedback_for_policy(result) == (
        "The agent clicked deals instead of searching.\n\n"
        "Checklist 1: Yes\nChecklist 2: No\nChecklist 3: In Progress"
    )


# -- with the daemon ---------------------------------------------------------------------

CHECKLIST = "Checklist 1: Search for USB-C cables\nChecklist 2: Open the cheapest"
STATE = PageState(
    url="http://shop.test/",
    axtree=(
        "RootWebArea 'Shop', focused\n\t[12] searchbox 'Search products'\n\t[13] button 'Search'"
    ),
)


class CountingRefiner:
    """A policy that refines to a new action each round and keeps the requests it got."""

    def __init__(self) -> None:
        self.requests: list[RefineRequest] = []

    def propose(self, state: PageState, context: PolicyContext) -> list[Candidate]:
        return [DRAFT]

    async def refine(self, request: RefineRequest) -> Candidate:
        self.requests.append(request)
        return Candidate(thought=f"Round {request.round}.", action=f"click('{12 + request.round}')")


@pytest.mark.model
async def test_refine_against_the_daemon(daemon: DaemonHandle) -> None:
    policy = CountingRefiner()
    async with AsyncClient(daemon.url, token=TEST_TOKEN) as client:
        session = await client.start_session(
            "Buy a cable",
            checklist=CHECKLIST,
            observation=Observation(url=STATE.url, axtree=STATE.axtree),
        )
        first = await session.score([DRAFT], samples=1, approval="never")
        context = PolicyContext("Buy a cable", samples=1)
        got = await refine(
            session,
            policy,
            STATE,
            context,
            DRAFT,
            first.results[0],
            previous_reward=2.0,  # above any reward: refinement always starts
            samples=1,
            approval="never",
        )
    assert 1 <= got.rounds <= 2 and len(got.scored) == got.rounds
    assert got.candidates[0] == DRAFT and got.rewards[0] == first.results[0].reward
    assert [r.results[0].reward for r in got.scored] == got.rewards[1:]
    for i in range(1, got.rounds):  # a further round only after an improvement
        assert got.rewards[i] is not None
        assert got.rewards[i - 1] is None or got.rewards[i] > got.rewards[i - 1]  # type: ignore[operator]
    if got.rounds == 1:  # stopped early: the refined one did not improve
        assert got.rewards[1] is None or (
            got.rewards[0] is not None and got.rewards[1] <= got.rewards[0]
        )
    scored = [r for r in got.rewards if r is not None]
    if scored:
        assert got.reward == max(scored)
    assert got.chosen == got.candidates[got.index] and got.decision.status == "auto"
    # The policy saw each draft with its feedback, and never a reward number.
    assert [r.draft for r in policy.requests] == got.candidates[: got.rounds]
    for request, fb in zip(policy.requests, got.feedback, strict=False):
        assert request.feedback == fb
        prompt = request.prompt()
        assert f"<feedback>\n{fb}\n</feedback>" in prompt
        assert f"Thought: {request.draft.thought}\nAction: {request.draft.action}\n" in prompt
        for reward in got.rewards:
            assert reward is None or str(reward) not in prompt


@pytest.mark.model
async def test_a_person_decides_on_the_kept_candidate(daemon: DaemonHandle) -> None:
    async with (
        AsyncClient(
            daemon.url,
            token=TEST_TOKEN,
            role="monitor",
            name="tui",
            approver=await daemon.approver("monitor", "tui"),
        ) as mon,
        AsyncClient(daemon.url, token=TEST_TOKEN) as client,
    ):
        sub = await mon.subscribe("*").start()
        session = await client.start_session(
            "Buy a cable",
            checklist=CHECKLIST,
            observation=Observation(url=STATE.url, axtree=STATE.axtree),
        )
        first = await session.score([DRAFT], samples=1, approval="never")
        task = asyncio.create_task(
            refine(
                session, CountingRefiner(), STATE, PolicyContext("Buy a cable"), DRAFT,
                first.results[0], previous_reward=2.0, samples=1, approval="always",
            )
        )  # fmt: skip
        while (event := await sub.get(timeout=60)).type != "approval.request":
            pass
        await mon.decide(event.request_id, "edit", action="click('12')")
        got = await asyncio.wait_for(task, 60)
    assert event.candidate.action == got.candidates[got.index].action  # the kept one was shown
    assert got.decision.status == "edited" and got.decision.index == got.index
    assert got.chosen == Candidate(thought=got.candidates[got.index].thought, action="click('12')")
    assert len(got.scored) == got.rounds + 1  # the rounds, then the person's gate
