"""The agent loop: observe → propose → select by reward → report → execute, until done.

Two planning paradigms (planning-framework paper, §3): ``step`` (step-by-step: every
step decides from the current page) and ``plan`` (full plan in advance: the policy
writes the plan from the start page first; it is sent in ``session.start`` so the
daemon's ``plan_adherence`` signal follows it live, and it is in every later prompt).
Selection: ``best_of_n`` (reward-guided), ``refine`` (best-of-n, then refinement on a
reward drop) or ``first`` (the policy's first proposal, scored for the record).
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from webshepherd.protocol.agents.best_of_n import Approval, best_of_n
from webshepherd.protocol.agents.environment import ActionError, ActionResult, Environment
from webshepherd.protocol.agents.policy import PolicyContext, as_policy
from webshepherd.protocol.agents.prompts import Turn
from webshepherd.protocol.agents.refine import refine
from webshepherd.protocol.client.session import SessionHandle
from webshepherd.protocol.common import AgentInfo, Candidate, Observation, Outcome, Screenshot
from webshepherd.protocol.replies import SessionEnded, Signal

if TYPE_CHECKING:
    from webshepherd.protocol.client import AsyncClient
    from webshepherd.protocol.client.sync import Client

Paradigm = Literal["step", "plan"]
Selection = Literal["best_of_n", "refine", "first"]


@dataclass
class StepResult:
    """One step of an episode."""

    step: int  # the daemon's step number
    url: str
    candidates: list[Candidate]  # what was scored (best-of-n candidates, then refinements)
    counts: list[int]  # proposals per best-of-n candidate
    rewards: list[float | None]  # per candidate in ``candidates``
    chosen: Candidate | None  # what ran; None when a person rejected it
    reward: float | None  # reward of what ran (None: edited by a person, or no label)
    decision: str  # the daemon's decision status: auto, approved, edited, rejected, timeout
    refined: int = 0  # refinement rounds
    error: str | None = None  # the ActionError text when the action could not run
    latency_ms: float = 0.0  # observe → action reported (proposal, scoring, decision)
    model_ms: float = 0.0  # the daemon's model time for this step's score requests
    signals: list[Signal] = field(default_factory=list)

    @property
    def rejected(self) -> bool:
        return self.chosen is None


@dataclass
class EpisodeResult:
    session_id: str
    paradigm: Paradigm
    plan: list[str] | None
    steps: list[StepResult]
    outcome: Outcome
    answer: str | None
    signals: list[Signal]

    @property
    def rewards(self) -> list[float | None]:
        """Reward of each executed action."""
        return [s.reward for s in self.steps if s.chosen is not None]


def _screenshot(png: bytes | None) -> Screenshot | None:
    return Screenshot(mime="image/png", data=base64.b64encode(png).decode()) if png else None


async def _maybe_await(value: Any) -> None:
    if inspect.isawaitable(value):
        await value


async def run_episode(
    client: AsyncClient,
    env: Environment,
    policy: Any,
    intent: str,
    *,
    paradigm: Paradigm = "step",
    select: Selection = "best_of_n",
    max_steps: int = 15,
    samples: int = 20,
    top_n: int = 5,
    reward_samples: int | None = None,
    approval: Approval = "auto",
    max_refinements: int = 2,
    checklist: str | None = None,
    start_url: str | None = None,
    agent_name: str = "agent",
    session: SessionHandle | str | None = None,
    end: bool = True,
    on_step: Callable[[StepResult], Any] | None = None,
) -> EpisodeResult:
    """Run one episode of ``policy`` on ``env`` under the reward model.

    ``samples``: policy answers per step (the paper samples 20); ``top_n``: distinct
    actions scored; ``reward_samples``: reward-model samples per candidate (daemon
    default when None). ``session``: run on an already-started session (a handle or an
    id, e.g. one the browser extension started) instead of starting one; it keeps the
    agent info it was started with, so a plan written here reaches the prompts but not
    the daemon. ``end``: end the session with the outcome (default). With
    ``select="refine"`` and approval other than ``never``, a person decides on the action
    refinement kept (one more score request per step, see :mod:`.refine`). A rejected
    action is not executed; the policy proposes again (``context.rejected``), which
    counts as a step. The outcome takes the agent's word: ``success`` when it sent its
    answer, ``failure`` when it reported the task infeasible or ran out of steps.
    """
    pol = as_policy(policy)
    state = await env.observe()
    plan = await pol.plan(intent, state) if paradigm == "plan" else None
    if session is None:
        handle = await client.start_session(
            intent,
            start_url=start_url or state.url,
            checklist=checklist,
            observation=Observation(url=state.url, axtree=state.axtree),
            agent=AgentInfo(name=agent_name, planning=paradigm, plan=plan),
        )
    elif isinstance(session, str):
        handle = SessionHandle(client, session, intent)
    else:
        handle = session
    signals: list[Signal] = []
    sub = await client.subscribe([handle.session_id]).start()

    async def collect() -> None:
        async for event in sub:
            if isinstance(event, Signal):
                signals.append(event)
            elif isinstance(event, SessionEnded) and event.session_id == handle.session_id:
                return

    collector = asyncio.create_task(collect())
    steps: list[StepResult] = []
    history: list[Turn] = []
    rejected: list[str] = []
    previous_reward: float | None = None
    last_error: str | None = None
    done: ActionResult | None = None
    try:
        for _ in range(max_steps):
            state = await env.observe()
            if last_error and not state.last_action_error:
                state = replace(state, last_action_error=last_error)
            t0 = time.perf_counter()
            observed = await handle.observe(state.url, state.axtree, _screenshot(state.screenshot))
            context = PolicyContext(
                intent, tuple(history), tuple(plan) if plan else None, samples, tuple(rejected)
            )
            proposals = await pol.propose(state, context)
            if select == "first":
                proposals = proposals[:1]
            bon = await best_of_n(
                handle,
                proposals,
                top_n=top_n,
                samples=reward_samples,
                approval="never" if select == "refine" else approval,
            )
            candidates, rewards = list(bon.candidates), list(bon.rewards)
            chosen, reward, decision = bon.chosen, bon.reward, bon.decision
            model_ms = bon.scored.timing.model_ms
            rounds = 0
            if select == "refine":
                result = next(r for r in bon.scored.results if r.index == bon.index)
                ref = await refine(
                    handle,
                    pol,
                    state,
                    context,
                    bon.candidates[bon.index],
                    result,
                    previous_reward,
                    max_rounds=max_refinements,
                    samples=reward_samples,
                    approval=approval,
                )
                candidates += ref.candidates[1:]
                rewards += ref.rewards[1:]
                chosen, reward, decision = ref.chosen, ref.reward, ref.decision
                model_ms += sum(s.timing.model_ms for s in ref.scored)
                rounds = ref.rounds
            if decision.status == "edited":
                reward = None  # the person's action was not scored
            rec = StepResult(
                step=observed.step,
                url=state.url,
                candidates=candidates,
                counts=list(bon.counts),
                rewards=rewards,
                chosen=chosen,
                reward=reward,
                decision=decision.status,
                refined=rounds,
                model_ms=model_ms,
            )
            steps.append(rec)
            if chosen is None:
                rejected.append(candidates[bon.index].action)
                rec.latency_ms = (time.perf_counter() - t0) * 1000
                if on_step is not None:
                    await _maybe_await(on_step(rec))
                continue
            rejected = []
            source: Literal["agent", "human"] = "human" if decision.status == "edited" else "agent"
            await handle.act(chosen.action, chosen.thought or None, observed.step, source)
            rec.latency_ms = (time.perf_counter() - t0) * 1000
            try:
                outcome = await env.execute(chosen.action)
                last_error = None
            except ActionError as exc:
                outcome, last_error = None, exc.message
            rec.error = last_error
            history.append(Turn(chosen.thought, chosen.action, last_error))
            previous_reward = reward
            if on_step is not None:
                await _maybe_await(on_step(rec))
            if outcome is not None and outcome.done:
                done = outcome
                break
        answer = done.message if done is not None else None
        final: Outcome = "success" if answer is not None else "failure"
        if end:
            await handle.end(final, answer)
            await asyncio.wait_for(collector, 10)
        else:
            await client.ping()  # everything the daemon sent before the pong has arrived
    finally:
        if not collector.done():
            collector.cancel()
        sub.close()
    by_step: dict[int, list[Signal]] = {}
    for s in signals:
        by_step.setdefault(s.step, []).append(s)
    for rec in steps:
        rec.signals = by_step.get(rec.step, [])
    return EpisodeResult(handle.session_id, paradigm, plan, steps, final, answer, signals)


def run_episode_sync(
    client: Client, env: Environment, policy: Any, intent: str, **kw: Any
) -> EpisodeResult:
    """Blocking :func:`run_episode` on a :class:`~webshepherd.protocol.client.sync.Client`
    (the environment's coroutines run on the client's private loop)."""
    return client._run(run_episode(client.aio, env, policy, intent, **kw))
