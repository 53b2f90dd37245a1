"""BrowserGym: process rewards for every step of any BrowserGym env, as a gymnasium wrapper.

```python
env = ProcessRewardWrapper(gym.make("browsergym/openended", task_kwargs={...}))
obs, info = env.reset()            # starts a webshepherd session
env.set_thought("The search box is [12].")
obs, reward, terminated, truncated, info = env.step("fill('12', 'usb-c cable')")
info["webshepherd"]["reward"]      # the judge's reward for that action (None: see "reason")
env.close()                         # ends the session with the env's own outcome
```

The daemon: ``url``/``token``, else ``$WEBSHEPHERD_URL`` and ``$WEBSHEPHERD_TOKEN`` (or the
token store), as :class:`~webshepherd.protocol.client.sync.Client` resolves them.

The observation the daemon receives is BrowserGym's own ``flatten_axtree_to_str`` of the
env's ``axtree_object`` with the default flags (what the model was trained on), Chromium's
``InlineTextBox`` nodes left out: byte for byte what the browser extension sends.

Commits are held in the browser (``hold_commits=True``, the default): the session starts with
``holds="browser"`` and a :class:`~webshepherd.integrations.commit_gate.CommitGate` on the
env's Playwright context pauses every request that would commit (a method other than GET, HEAD
or OPTIONS, a top-level navigation to another origin, a download) and asks the daemon, which
answers by the session's mode (``ask``: a paired person decides, nobody paired: refused;
``watch``: runs, flagged; ``stop``: refused) and the operator's sandbox origins. A refused
request fails in the browser; the step's ``obs["last_action_error"]`` says
``refused by <who> (<rule or mode>): <note> — way out: <way_out>`` and
``info["webshepherd"]["commits"]`` lists every request the step paused, with its decision.
A step that sends nothing runs, whatever its button is called. ``hold_commits=False``: the
daemon's guard rules hold by what the page says (the text-only fallback).

Checklist: ``checklist=`` is the task's own (``"Checklist 1: ...\nChecklist 2: ..."``, as
WebPRM and WebArena tasks have), recorded as ``reference`` and used first; without it the
judge writes one from the intent, recorded as ``generated`` (never a training target). A judge
that gives no judgement (no checklist it could parse, a model error) gives ``reward=None`` and
``info["webshepherd"]["reason"]``, never an exception; the step still runs, and the next step
asks the judge for a checklist again.

Training data: ``step(action, candidates=[...])`` scores the other actions the agent weighed
with the executed one in one ``score``; the recording keeps them all and the executed one as
the step's action, and the env's outcome labels the session (docs/export-formats.md says
which rows each export makes of it).

Thought: the one given with :meth:`ProcessRewardWrapper.set_thought` before ``step`` (it is
used once). Approval: with ``approval="always"`` (or ``"auto"`` and the daemon's policy) a
person decides; a refused action is not executed and ``step`` returns the pre-step
observation with ``last_action_error`` saying who refused, task reward 0, the env's own last
``info`` (``task_info`` included) and ``info["webshepherd"]["refused"]``; an edited action
runs instead of the agent's.

Outcome: recorded from the env at ``reset()`` (the env reused) and ``close()``: ``success``
when the episode terminated with a reward > 0, ``failure`` when it terminated with a reward
<= 0, ``unknown`` when it was interrupted before the env terminated (the session's answer
says so).
"""

from __future__ import annotations

import base64
import contextlib
import io
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, Protocol, TypedDict, TypeVar

import gymnasium as gym
from browsergym.utils.obs import IGNORED_AXTREE_ROLES, flatten_axtree_to_str
from webshepherd.protocol.agents.best_of_n import BestOfN, action_key, best_of_n_sync, decide
from webshepherd.protocol.agents.environment import ActionError, ActionResult, PageState
from webshepherd.protocol.agents.refusal import refusal_info, refusal_text, refused
from webshepherd.protocol.client.sync import Client, SyncSession
from webshepherd.protocol.common import Candidate, Outcome
from webshepherd.protocol.errors import ModelError, ModelUnavailableError
from webshepherd.protocol.replies import CommitDecided, Scored

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from webshepherd.integrations.commit_gate import CommitGate
    from webshepherd.protocol.common import CandidateResult

P = ParamSpec("P")
T = TypeVar("T")

Approval = Literal["auto", "always", "never"]
#: Roles left out of the text: BrowserGym's own, and Chromium's InlineTextBox (not in training).
OBSERVATION_IGNORED_ROLES = [*IGNORED_AXTREE_ROLES, "InlineTextBox"]
#: A judge that gave no judgement: a result (reward None and its reason), never an exception.
JUDGING_ERRORS = (ModelError, ModelUnavailableError)


class GoalPart(TypedDict, total=False):
    """One part of a BrowserGym goal (``obs["goal_object"]``, chat-message content)."""

    type: str
    text: str


class BrowserGymObs(TypedDict, total=False):
    """The keys of a BrowserGym observation read or written here (BrowserGym's has more)."""

    url: str
    goal: str
    goal_object: list[GoalPart]
    axtree_object: dict[str, object]  # the AX tree as CDP gave it (flatten_axtree_to_str)
    screenshot: npt.NDArray[np.uint8]  # RGB, height x width x 3
    last_action: str
    last_action_error: str


class ObservationFields(TypedDict):
    """A BrowserGym obs as the wire's observation fields (``observe(**fields)``)."""

    url: str
    axtree: str
    screenshot: dict[str, str] | None


#: ``info`` as BrowserGym returns it, with ``"webshepherd"`` added here: JSON-like values of
#: many shapes, which callers index (``info["webshepherd"]["reward"]``).
Info = dict[str, Any]


class BrowserGymEnv(Protocol):
    """What is called on a BrowserGym env (a ``gymnasium.Env`` of ``browsergym/...``)."""

    def reset(self, **kwargs: object) -> tuple[BrowserGymObs, Info]: ...

    def step(self, action: str) -> tuple[BrowserGymObs, float, bool, bool, Info]: ...

    def close(self) -> None: ...


def observation_text(obs: BrowserGymObs) -> str:
    """The AX-tree text webshepherd scores: BrowserGym's flattening, as the extension sends it."""
    return str(flatten_axtree_to_str(obs["axtree_object"], ignored_roles=OBSERVATION_IGNORED_ROLES))


def screenshot_png(obs: BrowserGymObs) -> dict[str, str] | None:
    """The env's screenshot (an RGB array) as a base64 PNG, or None when the obs has none."""
    shot = obs.get("screenshot")
    if shot is None or getattr(shot, "size", 0) == 0:
        return None
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(shot).save(buf, format="PNG")
    return {"mime": "image/png", "data": base64.b64encode(buf.getvalue()).decode("ascii")}


def observation(obs: BrowserGymObs) -> ObservationFields:
    """The protocol's observation (url, AX-tree text, screenshot) for a BrowserGym obs."""
    return {"url": obs["url"], "axtree": observation_text(obs), "screenshot": screenshot_png(obs)}


def judging_failure(exc: Exception) -> str:
    """The readable reason a judge gave no judgement (``info["webshepherd"]["reason"]``)."""
    message = getattr(exc, "message", None) or str(exc)
    return f"the judge gave no judgement: {message}"


def no_reward_reason(results: Sequence[CandidateResult]) -> str:
    """Why a scored step has no reward: the daemon's reason when the judge gave no judgement
    (no sample at all, e.g. no checklist it could parse), else an output that did not parse."""
    told = next((r.feedback for r in results if not r.samples and r.feedback), None)
    return f"the judge gave no judgement: {told}" if told else "the judge's output was not parsed"


def commit_record(decided: CommitDecided) -> dict[str, object]:
    """One request a step paused, as ``info["webshepherd"]["commits"]`` lists it."""
    req, d = decided.request, decided.decision
    return {
        "method": req.method,
        "url": req.url,
        "kind": req.kind,
        "trigger": req.trigger,
        "refused": refused(d),
        "flagged": decided.flagged,
        **{k: v for k, v in refusal_info(d, req.trigger).items() if k != "action"},
    }


def episode_outcome(terminated: bool, reward: float | None, steps: int) -> tuple[Outcome, str]:
    """The session's outcome and answer from the env's own termination and final reward."""
    if terminated:
        won = reward is not None and reward > 0
        return ("success" if won else "failure"), f"the env terminated with reward {reward}"
    return "unknown", f"interrupted mid-episode after {steps} steps: the env did not terminate"


class ProcessRewardWrapper(gym.Wrapper):
    """Scores each action with the webshepherd daemon before the wrapped env runs it; holds
    the browser's commits for the daemon to decide (``hold_commits``)."""

    def __init__(
        self,
        env: gym.Env,
        *,
        url: str | None = None,
        token: str | None = None,
        intent: str | None = None,
        checklist: str | None = None,
        samples: int = 1,
        approval: Approval = "never",
        client: Client | None = None,
        hold_commits: bool = True,
    ) -> None:
        super().__init__(env)
        self._own_client = client is None
        self.client = client if client is not None else Client(url, token)
        self.intent = intent
        self.checklist = checklist
        self.samples = samples
        self.approval: Approval = approval
        self.hold_commits = hold_commits
        self.session: SyncSession | None = None
        self._gate: CommitGate | None = None  # the CommitGate on the env's current context
        self._gate_context: object = None
        self._thought: str | None = None
        self._obs: BrowserGymObs | None = None
        self._info: Info = {}
        self._steps = 0
        self._terminated = False
        self._last_reward: float | None = None

    def set_thought(self, thought: str | None) -> None:
        """The agent's reasoning for the next ``step`` (sent with the action, used once)."""
        self._thought = thought

    def reset(self, **kwargs: object) -> tuple[BrowserGymObs, Info]:
        self._end_episode()
        obs, info = self.env.reset(**kwargs)
        intent = self.intent or obs.get("goal") or _goal_text(obs)
        if not self.client.connected:
            self.client.connect()
        self.session = self.client.start_session(
            intent,
            start_url=obs["url"],
            checklist=self.checklist,
            observation=observation(obs),
            agent="browsergym",
            holds="browser" if self.hold_commits else None,
        )
        if self.hold_commits:
            self._hold(self.session, obs["url"])
        self._obs, self._thought = obs, None
        self._steps, self._terminated, self._last_reward = 0, False, None
        info = dict(info)
        info["webshepherd"] = {"session_id": self.session.session_id}
        self._info = info
        return obs, info

    def _hold(self, session: SyncSession, start_url: str) -> None:
        """The gate on the env's context (again when the env made a new browser at reset)."""
        from webshepherd.integrations.commit_gate import CommitGate

        context = getattr(self.env.unwrapped, "context", None)
        if context is None:
            raise TypeError(
                "hold_commits=True needs a BrowserGym env with a Playwright context "
                "(env.unwrapped.context); pass hold_commits=False to have the daemon's guard "
                "rules hold by what the page says"
            )
        if self._gate is not None:
            old, self._gate = self._gate, None
            # its context closed with the env's old browser: nothing left to undo
            with contextlib.suppress(Exception):
                old.detach()
        self._gate = CommitGate(session.commit_check, session_id=session.session_id)
        self._gate.attach(context, start_url=start_url)
        self._gate_context = context

    def step(
        self, action: str, candidates: Sequence[str | tuple[str | None, str]] | None = None
    ) -> tuple[BrowserGymObs, float, bool, bool, Info]:
        """Score ``action`` (and ``candidates``, the other actions the agent weighed this step:
        actions or ``(thought, action)`` pairs; ``action`` is added when missing) in one
        ``score``, then run ``action`` unless refused. The recording keeps every candidate's
        judgement and ``action`` as the one executed: the exports' chosen action in a session
        the env's outcome marks a success, the others its rejected ones where they are clear
        negatives (docs/export-formats.md). ``info["webshepherd"]["candidates"]``: each one's
        action and reward."""
        session, before = self._require()
        thought, self._thought = self._thought, None
        proposals, pick = _proposals(action, thought, candidates)
        ws: Info = {"session_id": session.session_id, "action": action, "commits": []}
        try:
            scored = session.score(proposals, samples=self.samples, approval=self.approval)
            if scored.decision.status != "auto" and _held_index(scored) != pick:
                # the daemon's decision covers its best candidate: the executed one alone
                proposals, pick = [proposals[pick]], 0
                scored = session.score(proposals, samples=self.samples, approval=self.approval)
        except JUDGING_ERRORS as exc:  # no judgement: a result, and the step runs as asked
            ws.update(reward=None, reason=judging_failure(exc), checklist=[], feedback="")
            ws["decision"] = "auto"
            return self._run(session, action, thought, ws)
        by_index = {r.index: r for r in scored.results}
        result = by_index.get(pick)
        ws.update(
            reward=result.reward if result else None,
            checklist=[item.model_dump() for item in result.items] if result else [],
            feedback=result.feedback if result else "",
            decision=scored.decision.status,
        )
        if candidates is not None:
            ws["candidates"] = [
                {"action": c.action, "reward": r.reward if (r := by_index.get(i)) else None}
                for i, c in enumerate(proposals)
            ]
        if result is not None and result.reward is None:
            ws["reason"] = no_reward_reason([result])
        chosen = decide(proposals, pick, scored.decision)
        if chosen is None:  # refused: the env does not run it, and keeps its own last info
            ws["refused"] = refusal_info(scored.decision, action)
            obs = before.copy()
            obs["last_action"] = action
            obs["last_action_error"] = refusal_text(scored.decision)
            info = dict(self._info)
            info["webshepherd"] = ws
            return obs, 0.0, False, False, info
        return self._run(session, chosen.action, chosen.thought, ws)

    def _run(
        self, session: SyncSession, action: str, thought: str | None, ws: Info
    ) -> tuple[BrowserGymObs, float, bool, bool, Info]:
        """``env.step(action)`` with the gate told what runs; the requests it paused."""
        ws["action"] = action
        if self._gate is not None:
            self._gate.trigger(action)
        try:
            obs, reward, terminated, truncated, info = self.env.step(action)
        finally:
            decided = self._gate.take_decisions() if self._gate is not None else []
            if self._gate is not None:
                self._gate.trigger(None)
        self._steps += 1
        self._terminated = bool(terminated)
        self._last_reward = float(reward)
        commits = ws["commits"] = [commit_record(d) for d in decided]
        refusals = [refusal_text(d.decision) for d in decided if refused(d.decision)]
        if refusals:
            obs = obs.copy()
            own = obs.get("last_action_error") or ""
            obs["last_action_error"] = "\n".join([*refusals, *([own] if own else [])])
            ws["refused"] = next(r for r in commits if r["refused"])
        session.client.report_action(session.session_id, action, thought)
        session.observe(obs["url"], observation_text(obs), screenshot_png(obs))
        self._obs = obs
        info = dict(info)
        info["webshepherd"] = ws
        self._info = info
        return obs, reward, terminated, truncated, info

    def choose(self, candidates: Sequence[tuple[str | None, str]]) -> tuple[int, BestOfN]:
        """Best-of-n without executing: the index into ``candidates`` and the scored result."""
        session, _ = self._require()
        proposals = [Candidate(thought=t or "", action=a) for t, a in candidates]
        result = best_of_n_sync(
            session, proposals, top_n=len(proposals), samples=self.samples, approval="never"
        )
        picked = action_key(result.candidates[result.index].action)
        index = next(i for i, c in enumerate(proposals) if action_key(c.action) == picked)
        return index, result

    def close(self) -> None:
        try:
            self._end_episode()
        finally:
            try:
                if self._gate is not None:
                    gate, self._gate = self._gate, None
                    gate.detach()
                self.env.close()
            finally:
                if self._own_client:
                    self.client.close()

    def _require(self) -> tuple[SyncSession, BrowserGymObs]:
        if self.session is None or self._obs is None:
            raise RuntimeError("call reset() before step() or choose()")
        return self.session, self._obs

    def _end_episode(self) -> None:
        """End the session with the episode's outcome, read from the env's own reward."""
        if self.session is not None:
            session, self.session = self.session, None
            outcome, answer = episode_outcome(self._terminated, self._last_reward, self._steps)
            session.end(outcome, answer)


def _proposals(
    action: str, thought: str | None, candidates: Sequence[str | tuple[str | None, str]] | None
) -> tuple[list[Candidate], int]:
    """The step's candidates (``action`` added when missing, with the step's thought) and the
    index of the one to execute."""
    out: list[Candidate] = []
    for c in candidates or ():
        t, a = (None, c) if isinstance(c, str) else c
        if not isinstance(a, str) or not a.strip():
            raise ValueError(f"candidates: {c!r} is not an action (a string or (thought, action))")
        out.append(Candidate(thought=t or "", action=a))
    key = action_key(action)
    pick = next((i for i, c in enumerate(out) if action_key(c.action) == key), None)
    if pick is None:
        out.append(Candidate(thought=thought or "", action=action))
        pick = len(out) - 1
    elif thought and not out[pick].thought:
        out[pick] = Candidate(thought=thought, action=out[pick].action)
    return out, pick


def _held_index(scored: Scored) -> int | None:
    """The candidate the daemon's decision is about (its index, else the best)."""
    return scored.decision.index if scored.decision.index is not None else scored.best


def _goal_text(obs: BrowserGymObs) -> str:
    parts = [m.get("text", "") for m in obs.get("goal_object", []) if m.get("type") == "text"]
    return "\n".join(parts) or "(no goal)"


class BrowserGymEnvironment:
    """A BrowserGym env as an agent-loop ``Environment`` (:mod:`webshepherd.protocol.agents`),
    so ``run_episode`` drives it in any paradigm, tree search included.

    ``observe()`` is the env's latest observation (the text the daemon scores, the screenshot
    as PNG, BrowserGym's ``last_action_error``); ``execute()`` is one ``env.step`` in a worker
    thread (an action BrowserGym could not run raises ``ActionError``); ``reset()`` is the
    env's own reset with ``reset_kwargs`` (the same task seed): the task's start state, from
    which tree search replays an action prefix. ``send_msg_to_user`` and ``report_infeasible``
    end the episode as the loop expects. Every env call runs on one worker thread of its own
    (Playwright's sync API stays on the thread that started it); ``close()`` closes the env
    there.
    """

    def __init__(self, env: BrowserGymEnv, **reset_kwargs: object) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.env = env
        self.reset_kwargs = reset_kwargs
        self._obs: BrowserGymObs | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="browsergym")

    async def _call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        import asyncio
        import functools

        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, functools.partial(fn, *args, **kwargs))

    async def reset(self) -> None:
        self._obs, _ = await self._call(self.env.reset, **self.reset_kwargs)

    async def close(self) -> None:
        """Close the env (on its thread) and the thread."""
        try:
            await self._call(self.env.close)
        finally:
            self._thread.shutdown(wait=False)

    async def observe(self) -> PageState:
        if self._obs is None:
            await self.reset()
        assert self._obs is not None
        shot = screenshot_png(self._obs)
        return PageState(
            url=str(self._obs.get("url", "")),
            axtree=observation_text(self._obs),
            screenshot=base64.b64decode(shot["data"]) if shot else None,
            last_action_error=self._obs.get("last_action_error") or None,
        )

    async def execute(self, action: str) -> ActionResult:
        ended = _final_action(action)
        obs, *_ = await self._call(self.env.step, action)
        self._obs = obs
        error = obs.get("last_action_error")
        if error:
            raise ActionError(f"{action.strip()}: {str(error).splitlines()[0]}")
        if ended is not None:
            name, text = ended
            if name == "send_msg_to_user":
                return ActionResult(action, message=text)
            return ActionResult(action, infeasible=text)
        return ActionResult(action)


def _final_action(action: str) -> tuple[str, str] | None:
    """``(name, text)`` of a ``send_msg_to_user`` or ``report_infeasible`` call, else None."""
    import ast

    try:
        node = ast.parse(action.strip(), mode="eval").body
    except SyntaxError:
        return None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("send_msg_to_user", "report_infeasible")
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ):
        return node.func.id, str(node.args[0].value)
    return None
