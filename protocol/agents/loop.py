"""The agent loop: observe → propose → select by reward → report → execute, until done.

Three planning paradigms (planning-framework paper, §3): ``step`` (step-by-step: every
step decides from the current page), ``plan`` (full plan in advance: the policy
writes the plan from the start page first; it is sent in ``session.start`` so the
daemon's ``plan_adherence`` signal follows it live, and it is in every later prompt) and
``tree`` (best-first tree search with the rewards as values, backtracking by reset and
replay: :mod:`.tree`).
Selection: ``best_of_n`` (reward-guided), ``refine`` (best-of-n, then refinement on a
reward drop) or ``first`` (the policy's first proposal, scored for the record).

The daemon's ``stalled`` signal (no checklist item advanced for ``stalled_after`` executed
steps) can steer the loop (``on_stalled``): ``refine`` sends the next step's choice through
refinement with the judge's feedback whatever its reward; ``stop`` ends the episode as a
failure, as the planning paper's agent stops after repeated actions.
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
from webshepherd.protocol.agents.environment import (
    ActionError,
    ActionResult,
    Environment,
    PageState,
)
from webshepherd.protocol.agents.policy import AsyncPolicy, PolicyContext, as_policy
from webshepherd.protocol.agents.refine import refine
from webshepherd.protocol.agents.refusal import refusal_text
from webshepherd.protocol.agents.tree import SearchTree, TreeSearch
from webshepherd.protocol.client.session import SessionHandle
from webshepherd.protocol.client.subscription import Subscription
from webshepherd.protocol.common import (
    DEFAULT_STALLED_AFTER,
    AgentInfo,
    Candidate,
    GuardHit,
    Observation,
    Outcome,
    Screenshot,
    Turn,
)
from webshepherd.protocol.replies import SessionEnded, Signal

if TYPE_CHECKING:
    from webshepherd.protocol.client import AsyncClient
    from webshepherd.protocol.client.sync import Client

Paradigm = Literal["step", "plan", "tree"]
Selection = Literal["best_of_n", "refine", "first"]
OnStalled = Literal["ignore", "refine", "stop"]


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
    # the guard rules that held the step for a person (or refused it, nobody being connected)
    guard: list[GuardHit] = field(default_factory=list)
    refined: int = 0  # refinement rounds
    # not run: who refused (a person only when one decided), why, and the way out
    refusal: str | None = None
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
    stopped: str | None = None  # "stalled" when on_stalled="stop" ended it; a tree search's stop
    tree: SearchTree | None = None  # the explored nodes (paradigm "tree"); ``steps`` is its path

    @property
    def rewards(self) -> list[float | None]:
        """Reward of each executed action."""
        return [s.reward for s in self.steps if s.chosen is not None]


def _screenshot(png: bytes | None) -> Screenshot | None:
    return Screenshot(mime="image/png", data=base64.b64encode(png).decode()) if png else None


async def _maybe_await(value: Any) -> None:
    if inspect.isawaitable(value):
        await value


@dataclass(frozen=True)
class EpisodeOptions:
    """How :func:`run_episode` runs an episode (every field has the paper's default).

    ``samples``: policy answers per step (the paper samples 20); ``top_n``: distinct
    actions scored; ``reward_samples``: reward-model samples per candidate (daemon
    default when None). ``session``: run on an already-started session (a handle or an
    id, e.g. one the browser extension started) instead of starting one; it keeps the
    agent info it was started with, so a plan written here reaches the prompts but not
    the daemon. ``end``: end the session with the outcome. ``on_step``: called (or
    awaited) with each step's result. ``stalled_after``: the session's k for the
    ``stalled`` signal (None: the daemon's default, 3); ``on_stalled``: what the loop does
    when it arrives (``ignore``, ``refine`` the next step, ``stop``).

    Tree search (``paradigm="tree"``; ``select``, ``approval``, ``on_stalled`` and
    ``max_steps`` do not apply): ``branching``: candidates scored per expanded node (in
    one request); budgets: ``max_expansions`` (score requests), ``max_depth`` (actions
    from the start page), ``max_model_calls`` (candidate judgements: candidates times
    reward samples; None: no limit) and ``max_seconds`` (wall time; None: no limit).
    ``tie_margin``: frontier values closer than this to the best count as equal (a sampled
    judge's rewards differ by that much for the same progress); among them the search takes
    the node proposed more often, then the one scored first. ``on_step`` is called with each
    step of the path found, once the search ends.
    """

    paradigm: Paradigm = "step"
    select: Selection = "best_of_n"
    max_steps: int = 15
    samples: int = 20
    top_n: int = 5
    reward_samples: int | None = None
    approval: Approval = "auto"
    max_refinements: int = 2
    checklist: str | None = None
    start_url: str | None = None
    agent_name: str = "agent"
    session: SessionHandle | str | None = None
    end: bool = True
    on_step: Callable[[StepResult], Any] | None = None
    stalled_after: int | None = None
    on_stalled: OnStalled = "ignore"
    branching: int = 5
    max_expansions: int = 30
    max_depth: int = 15
    max_model_calls: int | None = None
    max_seconds: float | None = None
    tie_margin: float = 0.02

    def __post_init__(self) -> None:
        for name in ("max_steps", "samples", "top_n", "branching", "max_expansions", "max_depth"):
            if getattr(self, name) < 1:
                raise ValueError(f"EpisodeOptions.{name} must be at least 1")
        if self.max_model_calls is not None and self.max_model_calls < 1:
            raise ValueError("EpisodeOptions.max_model_calls must be at least 1")
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise ValueError("EpisodeOptions.max_seconds must be positive")
        if not 0.0 <= self.tie_margin < 1.0:
            raise ValueError("EpisodeOptions.tie_margin must be in [0, 1)")


async def run_episode(
    client: AsyncClient,
    env: Environment,
    policy: Any,
    intent: str,
    options: EpisodeOptions | None = None,
) -> EpisodeResult:
    """Run one episode of ``policy`` on ``env`` under the reward model.

    With ``select="refine"`` and approval other than ``never``, a person decides on the
    action refinement kept (one more score request per step, see :mod:`.refine`). A
    rejected action is not executed; the policy proposes again (``context.rejected``),
    which counts as a step. The outcome takes the agent's word: ``success`` when it sent
    its answer, ``failure`` when it reported the task infeasible or ran out of steps.
    """
    opts = options or EpisodeOptions()
    pol = as_policy(policy)
    state = await env.observe()
    plan = await pol.plan(intent, state) if opts.paradigm == "plan" else None
    handle = await _session(client, intent, state, plan, opts)
    signals: list[Signal] = []
    sub = await client.subscribe([handle.session_id]).start()
    collector = asyncio.create_task(_collect_signals(sub, handle.session_id, signals))
    episode = _Episode(handle, env, pol, intent, plan, opts, signals)
    search = TreeSearch(episode) if opts.paradigm == "tree" else None
    try:
        if search is not None:
            done = await search.run()
            episode.steps = _path_steps(search.tree)
            if opts.on_step is not None:
                for rec in episode.steps:
                    await _maybe_await(opts.on_step(rec))
        else:
            done = await episode.run()
        answer = done.message if done is not None else None
        final: Outcome = "success" if answer is not None else "failure"
        if opts.end:
            await handle.end(final, answer)
            await asyncio.wait_for(collector, 10)
        else:
            await client.ping()  # everything the daemon sent before the pong has arrived
    finally:
        if not collector.done():
            collector.cancel()
        sub.close()
    by_step: dict[int, list[Signal]] = {}
    for sig in signals:
        by_step.setdefault(sig.step, []).append(sig)
    for rec in episode.steps:
        rec.signals = by_step.get(rec.step, [])
    return EpisodeResult(
        handle.session_id,
        opts.paradigm,
        plan,
        episode.steps,
        final,
        answer,
        signals,
        _stopped(episode, search),
        search.tree if search is not None else None,
    )


def _stopped(episode: _Episode, search: TreeSearch | None) -> str | None:
    if search is not None:
        return search.tree.stop
    return "stalled" if episode.stalled and episode.opts.on_stalled == "stop" else None


def _path_steps(tree: SearchTree) -> list[StepResult]:
    """The best path as the loop's step records: at each node on it, its parent's scored
    children and the one taken (what the planning metrics and exports read)."""
    out: list[StepResult] = []
    for nid in tree.path[1:]:
        node = tree.node(nid)
        assert node.parent is not None
        parent = tree.node(node.parent)
        sibs = tree.children(parent.node)
        out.append(
            StepResult(
                step=parent.expanded_at if parent.expanded_at is not None else 0,
                url=parent.url or "",
                candidates=[
                    Candidate(thought=s.thought or "", action=s.action or "") for s in sibs
                ],
                counts=[s.count for s in sibs],
                rewards=[s.reward for s in sibs],
                chosen=Candidate(thought=node.thought or "", action=node.action or ""),
                reward=node.reward,
                decision="auto",
                error=node.error,
            )
        )
    return out


async def _session(
    client: AsyncClient,
    intent: str,
    state: PageState,
    plan: list[str] | None,
    opts: EpisodeOptions,
) -> SessionHandle:
    """The session to run on: the one given, or a new one with the policy's plan."""
    if isinstance(opts.session, SessionHandle):
        return opts.session
    if isinstance(opts.session, str):
        return SessionHandle(client, opts.session, intent)
    return await client.start_session(
        intent,
        start_url=opts.start_url or state.url,
        checklist=opts.checklist,
        observation=Observation(
            url=state.url,
            axtree=state.axtree,
            elements=dict(state.elements) if state.elements is not None else None,
        ),
        agent=AgentInfo(
            name=opts.agent_name,
            planning=opts.paradigm,
            plan=plan,
            stalled_after=opts.stalled_after or DEFAULT_STALLED_AFTER,
        ),
    )


async def _collect_signals(sub: Subscription, session_id: str, into: list[Signal]) -> None:
    """The session's signals, until it ends."""
    async for event in sub:
        if isinstance(event, Signal):
            into.append(event)
        elif isinstance(event, SessionEnded) and event.session_id == session_id:
            return


class _Episode:
    """The steps of one episode and what the next step's prompt needs from them."""

    def __init__(
        self,
        handle: SessionHandle,
        env: Environment,
        policy: AsyncPolicy,
        intent: str,
        plan: list[str] | None,
        opts: EpisodeOptions,
        signals: list[Signal] | None = None,
    ) -> None:
        self.handle, self.env, self.policy, self.opts = handle, env, policy, opts
        self.signals = signals if signals is not None else []  # filled by the subscription
        self.stalled = False  # the latest executed step brought a stalled signal
        self.intent = intent
        self.plan = tuple(plan) if plan else None
        self.steps: list[StepResult] = []
        self.history: list[Turn] = []
        self.rejected: list[str] = []  # actions a person rejected since the last executed one
        self.previous_reward: float | None = None
        self.last_error: str | None = None

    async def run(self) -> ActionResult | None:
        """Steps until the agent is done (its final action's result) or out of steps."""
        for _ in range(self.opts.max_steps):
            rec, outcome = await self.step()
            if self.opts.on_step is not None:
                await _maybe_await(self.opts.on_step(rec))
            if outcome is not None and outcome.done:
                return outcome
            if self.stalled and self.opts.on_stalled == "stop":
                return None
        return None

    async def _stalled_at(self, step: int) -> bool:
        """Whether the daemon sent ``stalled`` for ``step``: everything it sent before the
        pong has arrived, and the subscription's collector runs before this resumes."""
        await self.handle.client.ping()
        await asyncio.sleep(0)
        return any(s.kind == "stalled" and s.step == step for s in self.signals)

    async def step(self) -> tuple[StepResult, ActionResult | None]:
        """Observe, propose, select and report; run the action unless a person rejected it."""
        state = await self.env.observe()
        if self.last_error and not state.last_action_error:
            state = replace(state, last_action_error=self.last_error)
        t0 = time.perf_counter()
        observed = await self.handle.observe(
            state.url, state.axtree, _screenshot(state.screenshot), state.elements
        )
        context = PolicyContext(
            self.intent, tuple(self.history), self.plan, self.opts.samples, tuple(self.rejected)
        )
        rec, best_action = await self._select(state, context, observed.step)
        self.steps.append(rec)
        chosen = rec.chosen
        if chosen is None:
            self.rejected.append(best_action)
            rec.latency_ms = (time.perf_counter() - t0) * 1000
            return rec, None
        self.rejected = []
        source: Literal["agent", "human"] = "human" if rec.decision == "edited" else "agent"
        await self.handle.act(chosen.action, chosen.thought or None, observed.step, source)
        rec.latency_ms = (time.perf_counter() - t0) * 1000
        try:
            outcome = await self.env.execute(chosen.action)
            self.last_error = None
        except ActionError as exc:
            outcome, self.last_error = None, exc.message
        rec.error = self.last_error
        self.history.append(Turn(chosen.thought, chosen.action, self.last_error))
        self.previous_reward = rec.reward
        if self.opts.on_stalled != "ignore":
            self.stalled = await self._stalled_at(observed.step)
        return rec, outcome

    async def _select(
        self, state: PageState, context: PolicyContext, step: int
    ) -> tuple[StepResult, str]:
        """Best-of-n (then refinement) over the policy's proposals: the step's record and
        the best-of-n action (the one a person rejected, when the record has no choice)."""
        opts = self.opts
        proposals = await self.policy.propose(state, context)
        if opts.select == "first":
            proposals = proposals[:1]
        forced = self.stalled and opts.on_stalled == "refine"
        refining = opts.select == "refine" or forced
        bon = await best_of_n(
            self.handle,
            proposals,
            top_n=opts.top_n,
            samples=opts.reward_samples,
            approval="never" if refining else opts.approval,
        )
        candidates, rewards = list(bon.candidates), list(bon.rewards)
        chosen, reward, decision = bon.chosen, bon.reward, bon.decision
        model_ms = bon.scored.timing.model_ms
        rounds = 0
        if refining:
            result = next(r for r in bon.scored.results if r.index == bon.index)
            ref = await refine(
                self.handle,
                self.policy,
                state,
                context,
                bon.candidates[bon.index],
                result,
                self.previous_reward,
                max_rounds=opts.max_refinements,
                samples=opts.reward_samples,
                approval=opts.approval,
                force=forced,
            )
            candidates += ref.candidates[1:]
            rewards += ref.rewards[1:]
            chosen, reward, decision = ref.chosen, ref.reward, ref.decision
            model_ms += sum(s.timing.model_ms for s in ref.scored)
            rounds = ref.rounds
        if decision.status == "edited":
            reward = None  # the person's action was not scored
        rec = StepResult(
            step=step,
            url=state.url,
            candidates=candidates,
            counts=list(bon.counts),
            rewards=rewards,
            chosen=chosen,
            reward=reward,
            decision=decision.status,
            guard=list(decision.guard),
            refined=rounds,
            model_ms=model_ms,
            refusal=refusal_text(decision) if chosen is None else None,
        )
        return rec, candidates[bon.index].action


def run_episode_sync(
    client: Client,
    env: Environment,
    policy: Any,
    intent: str,
    options: EpisodeOptions | None = None,
) -> EpisodeResult:
    """Blocking :func:`run_episode` on a :class:`~webshepherd.protocol.client.sync.Client`
    (the environment's coroutines run on the client's private loop)."""
    return client._run(run_episode(client.aio, env, policy, intent, options))
