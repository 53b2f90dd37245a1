"""run_episode end to end: a real daemon (tiny model), the bundled shop in the text browser,
and the scripted shop policy, in both planning paradigms."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from webshepherd.daemon.demo.agent import CHECKLIST, PLAN, TASK, ShopPolicy
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.text_env import TextEnvironment
from webshepherd.daemon.sessions.signals import follows
from webshepherd.protocol import Signal
from webshepherd.protocol.agents import (
    EpisodeOptions,
    PageState,
    PolicyContext,
    StepResult,
    run_episode,
    run_episode_sync,
    select,
)
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.client.sync import Client
from webshepherd.protocol.common import Candidate

from tests.fixtures.daemon import TEST_TOKEN, DaemonHandle
from tests.fixtures.scripted_judge import NO_GUARDS, ScriptedJudge, scripted_daemon
from tests.protocol.client.test_async_client import client

pytestmark = pytest.mark.model


@pytest.fixture
def shop() -> Iterator[ShopServer]:
    with ShopServer() as server:
        yield server


def check_best_of_n_step(rec: StepResult) -> None:
    """The executed candidate is the reward-guided pick among the scored ones."""
    n = len(rec.counts)
    assert rec.counts == sorted(rec.counts, reverse=True)  # most frequent first, then first seen
    pick = select(rec.rewards[:n], rec.counts, list(range(n)))
    assert rec.chosen == rec.candidates[pick] and rec.reward == rec.rewards[pick]


async def test_step_by_step_with_best_of_n(daemon: DaemonHandle, shop: ShopServer) -> None:
    seen: list[StepResult] = []
    async with client(daemon) as c:
        result = await run_episode(
            c, TextEnvironment(shop.url), ShopPolicy(seed=2), TASK,
            EpisodeOptions(max_steps=3, reward_samples=1, approval="never", checklist=CHECKLIST,
                           on_step=seen.append),
        )  # fmt: skip
        recorded = await c.session(result.session_id)
    assert result.paradigm == "step" and result.plan is None
    assert len(result.steps) == 3 and seen == result.steps
    assert [s.step for s in result.steps] == [1, 2, 3]
    for rec in result.steps:
        check_best_of_n_step(rec)
        assert rec.decision == "auto" and rec.refined == 0 and rec.error is None
        assert rec.latency_ms > 0 and len(rec.candidates) == len(rec.rewards)
    assert result.outcome == "failure" and result.answer is None  # out of steps
    assert not [s for s in result.signals if s.kind == "plan_adherence"]
    summary = recorded.session
    assert summary.agent.planning == "step" and summary.agent.plan is None
    assert summary.outcome == "failure"
    actions = [e["action"] for e in recorded.events if e["type"] == "action"]
    assert actions == [s.chosen.action for s in result.steps if s.chosen]


async def test_full_plan_in_advance_with_refinement(daemon: DaemonHandle, shop: ShopServer) -> None:
    async with (
        client(
            daemon,
            role="monitor",
            name="watcher",
            approver=await daemon.approver("monitor", "watcher"),
        ) as mon,
        client(daemon) as c,
    ):
        sub = await mon.subscribe("*").start()
        result = await run_episode(
            c, TextEnvironment(shop.url), ShopPolicy(seed=4), TASK,
            EpisodeOptions(paradigm="plan", select="refine", max_steps=2, reward_samples=1,
                           approval="never", checklist=CHECKLIST),
        )  # fmt: skip
        events: list[Any] = []
        while not (events and events[-1].type == "session.ended"):
            events.append(await sub.get(timeout=30))
    assert result.plan == list(PLAN)
    started = next(e for e in events if e.type == "session.started")
    assert started.agent.planning == "plan" and started.agent.plan == list(PLAN)
    live = [e for e in events if isinstance(e, Signal) and e.kind == "plan_adherence"]
    assert [s.step for s in live] == [s.step for s in result.steps]  # one per executed action
    assert [(s.step, s.ok, s.plan_step) for s in live] == [
        (s.step, s.ok, s.plan_step) for s in result.signals if s.kind == "plan_adherence"
    ]
    assert live[0].plan_step == 1 and live[0].planned == PLAN[0]
    for rec in result.steps:
        assert [s.kind for s in rec.signals].count("plan_adherence") == 1
        assert 0 <= rec.refined <= 2 and len(rec.candidates) == len(rec.counts) + rec.refined
        if rec.refined == 0:
            check_best_of_n_step(rec)
        else:  # refinement keeps the best of the draft and its refinements
            tried = [rec.rewards[rec.candidates.index(rec.chosen)]] if rec.chosen else []
            tried += rec.rewards[len(rec.counts) :]
            scored = [r for r in tried if r is not None]
            assert rec.reward == (max(scored) if scored else None)
    # The daemon judged the executed action against the plan the policy wrote.
    chosen = result.steps[0].chosen
    assert chosen is not None
    assert live[0].ok == any(follows(PLAN[k], chosen.action, chosen.thought) for k in (0, 1))


async def test_the_episode_ends_when_the_agent_answers(start_daemon, shop: ShopServer) -> None:
    daemon = await start_daemon(guards=NO_GUARDS)  # the order is placed unattended
    async with client(daemon) as c:
        result = await run_episode(
            c, TextEnvironment(shop.url), ShopPolicy(seed=0, bad_per_step=0), TASK,
            EpisodeOptions(select="first", max_steps=12, reward_samples=1, approval="never",
                           checklist=CHECKLIST),
        )  # fmt: skip
        recorded = await c.session(result.session_id)
    assert result.outcome == "success" and result.answer == "Order VW-1001 is placed."
    assert len(result.steps) == 8 and result.steps[-1].chosen is not None
    assert result.steps[-1].chosen.action.startswith("send_msg_to_user(")
    assert shop.state.orders and shop.state.orders[0]["name"] == "Ada Lovelace"
    assert recorded.session.outcome == "success"
    ended = next(e for e in recorded.events if e["type"] == "session.ended")
    assert ended["answer"] == "Order VW-1001 is placed."


class ClumsyPolicy:
    """Tries a bid that does not exist, then gives up; keeps the states it was shown."""

    def __init__(self) -> None:
        self.states: list[PageState] = []

    async def __call__(self, state: PageState, context: PolicyContext) -> list[Any]:
        self.states.append(state)
        if not context.history:
            return [("The buy button must be [999].", "click('999')")]
        return ["report_infeasible('The shop has no button 999.')"]


async def test_action_errors_reach_the_policy_like_browsergym(
    daemon: DaemonHandle, shop: ShopServer
) -> None:
    policy = ClumsyPolicy()
    async with client(daemon) as c:
        result = await run_episode(
            c, TextEnvironment(shop.url), policy, "Buy something",
            EpisodeOptions(max_steps=5, reward_samples=1, approval="never", checklist=CHECKLIST),
        )  # fmt: skip
    first, second = result.steps
    assert first.error is not None and "no element with bid '999'" in first.error
    assert policy.states[0].last_action_error is None
    assert policy.states[1].last_action_error == first.error
    assert second.error is None and result.outcome == "failure" and result.answer is None


async def test_a_rejected_action_is_not_run_and_the_policy_proposes_again(
    daemon: DaemonHandle, shop: ShopServer
) -> None:
    """On a session another client started (as the browser extension would)."""
    async with (
        client(
            daemon,
            role="monitor",
            name="person",
            approver=await daemon.approver("monitor", "person"),
        ) as mon,
        client(
            daemon, role="extension", name="ext", approver=await daemon.approver("extension", "ext")
        ) as ext,
        client(daemon) as agent,
    ):
        sub = await mon.subscribe("*").start()
        env = TextEnvironment(shop.url)
        page = await env.observe()
        started = await ext.start_session(
            TASK, checklist=CHECKLIST, observation={"url": page.url, "axtree": page.axtree}
        )
        decisions: list[Any] = []

        async def person() -> None:
            for decision in ("reject", "approve"):
                while (event := await sub.get(timeout=60)).type != "approval.request":
                    pass
                decisions.append(event.candidate.action)
                await mon.decide(event.request_id, decision)  # type: ignore[arg-type]

        deciding = asyncio.create_task(person())
        result = await run_episode(
            agent, env, ShopPolicy(seed=5), TASK,
            EpisodeOptions(session=started.session_id, max_steps=2, top_n=2, reward_samples=1,
                           approval="always"),
        )  # fmt: skip
        await asyncio.wait_for(deciding, 30)
    assert result.session_id == started.session_id
    rejected, approved = result.steps
    assert rejected.rejected and rejected.decision == "rejected"
    assert approved.decision == "approved" and approved.chosen is not None
    assert approved.chosen.action == decisions[1] != decisions[0]
    assert decisions[0] not in [c.action for c in approved.candidates]


async def test_sync_twin(daemon: DaemonHandle, shop: ShopServer) -> None:
    def blocking() -> Any:
        with Client(daemon.url, token=TEST_TOKEN) as c:
            return run_episode_sync(
                c, TextEnvironment(shop.url), ShopPolicy(seed=6), TASK,
                EpisodeOptions(max_steps=1, reward_samples=1, approval="never",
                               checklist=CHECKLIST),
            )  # fmt: skip

    result = await asyncio.to_thread(blocking)  # the daemon runs on this test's loop
    assert len(result.steps) == 1 and result.steps[0].chosen is not None


class Idle:
    """A policy that never gets anywhere: it waits; asked to refine, it scrolls."""

    def propose(self, state: PageState, context: PolicyContext) -> list[Candidate]:
        return [Candidate(thought="Wait for the page.", action="noop()")]

    def refine(self, request: Any) -> Candidate:
        return Candidate(thought="Look further down.", action="scroll(0, 300)")


async def test_a_stalled_signal_stops_or_refines_the_loop(shop: ShopServer, tmp_path) -> None:
    """Setup: the judge is scripted (every action: reward 0.5, the one checklist item at
    No), so no item ever advances and the stalled signal's timing is known by construction;
    the test is about the loop's reaction, not the judgement."""
    judge = ScriptedJudge(default=(0.5, (0,), "nothing moved"))
    opts = dict(max_steps=5, reward_samples=1, approval="never", checklist="Checklist 1: Buy")
    async with (
        scripted_daemon(tmp_path, judge) as server,
        AsyncClient(server.url, TEST_TOKEN) as c,
    ):
        stop = await run_episode(
            c, TextEnvironment(shop.url), Idle(), TASK,
            EpisodeOptions(stalled_after=2, on_stalled="stop", **opts),
        )  # fmt: skip
        refine = await run_episode(
            c, TextEnvironment(shop.url), Idle(), TASK,
            EpisodeOptions(stalled_after=1, on_stalled="refine", max_refinements=1,
                           **{**opts, "max_steps": 2}),
        )  # fmt: skip
        recorded = await c.session(stop.session_id)
    # k = 2: the second executed step stalls, and the episode stops there as a failure
    assert stop.stopped == "stalled" and stop.outcome == "failure" and len(stop.steps) == 2
    assert [(s.kind, s.step, s.stalled_steps) for s in stop.signals if s.kind == "stalled"] == [
        ("stalled", 2, 2)
    ]
    assert recorded.session.agent.stalled_after == 2
    # k = 1: the first step stalls, so the second goes through refinement whatever its reward
    assert refine.stopped is None and [s.refined for s in refine.steps] == [0, 1]
    assert refine.steps[1].candidates[-1].action == "scroll(0, 300)"


async def test_a_guarded_step_with_nobody_paired_is_refused_and_not_run(
    shop: ShopServer, tmp_path
) -> None:
    """The daemon's guards are on (its default); nobody is paired to decide. Setup: the judge
    is scripted (every action 0.9, far above the approval threshold), so only a guard can stop
    a step. The text browser sends its element facts: the product page's "Add to cart" submits
    a POST form, and the daemon refuses it at once; the loop never runs it."""
    judge = ScriptedJudge(default=(0.9, (1, 1, 1, 1), "looks right"))
    async with (
        scripted_daemon(tmp_path, judge) as server,
        AsyncClient(server.url, TEST_TOKEN) as c,
    ):
        result = await run_episode(
            c, TextEnvironment(shop.url), ShopPolicy(seed=0, bad_per_step=0), TASK,
            EpisodeOptions(max_steps=6, reward_samples=1, approval="never", checklist=CHECKLIST),
        )  # fmt: skip
    refused = [s for s in result.steps if s.guard]
    assert refused, [(s.url, s.decision, s.chosen) for s in result.steps]
    first = refused[0]
    assert first.decision == "rejected" and first.chosen is None
    assert [h.rule for h in first.guard] == ["form_submit"]
    assert "/product/" in first.url
    assert shop.state.cart == [] and shop.state.orders == []  # nothing was added, nothing ordered
    ran = [s.chosen.action for s in result.steps if s.chosen is not None]
    assert all(s.decision == "auto" and not s.guard for s in result.steps if s.chosen is not None)
    assert ran  # the search and the product's link ran (GET, same origin)
