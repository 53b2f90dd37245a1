"""BrowserGym: process rewards for every step of any BrowserGym env, as a gymnasium wrapper.

```python
env = ProcessRewardWrapper(gym.make("browsergym/openended", task_kwargs={...}))
obs, info = env.reset(checklist=["Search for a cable"])  # starts a webshepherd session
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

Checklist, per episode: ``reset(checklist=...)`` takes the episode's items (a list of
strings), or a callable ``(goal, task_info) -> list[str]`` called once the env's reset has
made the episode's goal known (``task_info``: the env's reset info's ``task_info``);
``checklist=`` of the constructor is the default for every episode (also the reference text,
``"Checklist 1: ...\nChecklist 2: ..."``). A given checklist is recorded as ``reference`` and
used first; without one the judge writes one from the goal, starting at ``reset()``
(recorded as ``generated``, never a training target). A judge that gives no judgement (no
checklist it could parse, a model error) gives ``reward=None`` and
``info["webshepherd"]["reason"]``, never an exception; the step still runs, and the next step
asks the judge for a checklist again.

``info["webshepherd"]`` (:data:`INFO_KEYS`): ``session_id``; ``checklist``, the items the
judge scores against (None while it has none); after a step, ``step`` (the scored step's
index, what :meth:`SyncSession.label` takes), ``action`` (the one executed), ``reward``,
``item_probabilities`` (the executed action's per-item label probabilities: ``index``,
``yes``, ``in_progress``, ``no``), ``feedback``, ``decision``, ``commits``, and when they
apply ``candidates``, ``reason`` and ``refused``. Ground truth goes through
``wrapper.session`` (the episode's :class:`~webshepherd.protocol.client.sync.SyncSession`):
``env.session.label(info["webshepherd"]["step"], action, ["yes", "no", ...])``.

Training data: ``step(action, candidates=[...])`` scores the other actions the agent weighed
with the executed one in one ``score``; the recording keeps them all and the executed one as
the step's action, and the env's outcome labels the session (docs/export-formats.md says
which rows each export makes of it).

Cost: with ``approval="never"`` (the default) and the browser holding commits, nothing waits
for a person, so the score is sent before ``env.step`` and awaited after it (the judge runs
while the browser does), and the new page's observation is sent on a worker thread while the
agent thinks (the next score queues behind it; ``choose``, ``reset`` and ``close`` wait for
it). Otherwise, or with ``overlap=False`` (a CPU too busy to run a judge beside the browser:
BrowserGym's actions time out after 500 ms), the score's decision comes first and the step runs
after it.

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

Chromium: BrowserGym launches its chat window without ``pw_chromium_kwargs``, so a machine
without playwright's own browser fails with "Executable doesn't exist at
.../ms-playwright/chromium-NNNN/...". :func:`use_chromium` points playwright at a Chromium
of the machine's for every launch of the process.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar

import gymnasium as gym
from webshepherd.integrations.browsergym_env import BrowserGymEnvironment
from webshepherd.integrations.browsergym_obs import (
    OBSERVATION_IGNORED_ROLES,
    BrowserGymEnv,
    BrowserGymObs,
    GoalPart,
    Info,
    ObservationFields,
    goal_text,
    observation,
    observation_text,
    screenshot_png,
    use_chromium,
)
from webshepherd.protocol.agents.best_of_n import BestOfN, action_key, best_of_n_sync, decide
from webshepherd.protocol.agents.refusal import refusal_info, refusal_text, refused
from webshepherd.protocol.client.sync import Client, SyncSession
from webshepherd.protocol.common import Candidate, Outcome
from webshepherd.protocol.errors import ModelError, ModelUnavailableError, WebShepherdError
from webshepherd.protocol.replies import CommitDecided, Scored

__all__ = [
    "INFO_KEYS",
    "JUDGING_ERRORS",
    "OBSERVATION_IGNORED_ROLES",
    "Approval",
    "BrowserGymEnv",
    "BrowserGymEnvironment",
    "BrowserGymObs",
    "ChecklistFn",
    "EpisodeChecklist",
    "GoalPart",
    "Info",
    "ObservationFields",
    "ProcessRewardWrapper",
    "StepResult",
    "checklist_text",
    "commit_record",
    "episode_outcome",
    "judging_failure",
    "no_reward_reason",
    "observation",
    "observation_text",
    "screenshot_png",
    "use_chromium",
]

if TYPE_CHECKING:
    from webshepherd.integrations.commit_gate import CommitGate
    from webshepherd.protocol.common import CandidateResult

P = ParamSpec("P")
T = TypeVar("T")

Approval = Literal["auto", "always", "never"]
#: A judge that gave no judgement: a result (reward None and its reason), never an exception.
JUDGING_ERRORS = (ModelError, ModelUnavailableError)


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


#: ``reset(checklist=...)``: the episode's items, or what makes them from the episode's goal
#: and the env's ``task_info`` once the env's reset has made them known.
ChecklistFn = Callable[[str, Mapping[str, Any]], Sequence[str]]
EpisodeChecklist = Sequence[str] | ChecklistFn
#: ``info["webshepherd"]``'s keys, each named for what it holds (the module's docstring).
INFO_KEYS = (
    "session_id", "checklist", "step", "action", "reward", "item_probabilities", "feedback",
    "decision", "commits", "candidates", "reason", "refused",
)  # fmt: skip
_DEFAULT: Any = object()  # reset() without checklist=: the wrapper's own
#: What ``env.step`` returns: obs, reward, terminated, truncated, info.
StepResult = tuple[BrowserGymObs, float, bool, bool, Info]


def checklist_text(items: Sequence[str]) -> str:
    """The reference text the daemon reads for ``items`` (``Checklist N: item`` lines); a
    list that is not one (no items, an empty or multi-line item) is a ``ValueError``."""
    if isinstance(items, str) or not isinstance(items, Sequence):
        raise ValueError(f"checklist: expected a list of strings, got {type(items).__name__}")
    if not items:
        raise ValueError("checklist: no items (pass None to have the judge write one)")
    for item in items:
        if not isinstance(item, str) or not item.strip() or "\n" in item:
            raise ValueError(f"checklist: {item!r} is not an item (one line of text)")
    return "\n".join(f"Checklist {i}: {item.strip()}" for i, item in enumerate(items, 1))


class ProcessRewardWrapper(gym.Wrapper):
    """Scores each action with the webshepherd daemon before the wrapped env runs it (or while
    it runs, when nothing waits for a person); holds the browser's commits for the daemon to
    decide (``hold_commits``). ``session``: the episode's session (None before ``reset``)."""

    def __init__(
        self,
        env: gym.Env,
        *,
        url: str | None = None,
        token: str | None = None,
        intent: str | None = None,
        checklist: str | EpisodeChecklist | None = None,
        samples: int = 1,
        approval: Approval = "never",
        client: Client | None = None,
        hold_commits: bool = True,
        overlap: bool = True,
    ) -> None:
        super().__init__(env)
        self._own_client = client is None
        self.client = client if client is not None else Client(url, token)
        self.intent = intent
        self.checklist = checklist
        self.samples = samples
        self.approval: Approval = approval
        self.hold_commits = hold_commits
        self.overlap = overlap
        self.session: SyncSession | None = None
        self._gate: CommitGate | None = None  # the CommitGate on the env's current context
        self._gate_context: object = None
        self._thought: str | None = None
        self._obs: BrowserGymObs | None = None
        self._info: Info = {}
        self._steps = 0
        self._terminated = False
        self._last_reward: float | None = None
        self._items: list[str] | None = None  # the episode's checklist, once known
        # the client's calls made off the env's thread: one at a time, in the order sent
        self._worker: ThreadPoolExecutor | None = None
        self._recording: Future[None] | None = None  # the last step's action and new page

    def set_thought(self, thought: str | None) -> None:
        """The agent's reasoning for the next ``step`` (sent with the action, used once)."""
        self._thought = thought

    @property
    def overlaps(self) -> bool:
        """Whether ``step`` runs the env while the judge scores: asked (``overlap``), and no
        decision can wait for a person (``approval="never"``; the browser's gate holds commits,
        so the daemon's rules only predict) and no step is refused before it runs."""
        return self.overlap and self.approval == "never" and self.hold_commits

    def reset(
        self, *, checklist: EpisodeChecklist | None = _DEFAULT, **kwargs: object
    ) -> tuple[BrowserGymObs, Info]:
        """The env's reset (``kwargs``: ``seed``, ``options``), then the episode's session.
        ``checklist``: this episode's items, or ``(goal, task_info) -> items``; None: the judge
        writes one; left out: the constructor's ``checklist``."""
        self._end_episode()
        obs, info = self.env.reset(**kwargs)
        goal = goal_text(obs) if obs.get("goal_object") else obs.get("goal") or "(no goal)"
        chosen = self.checklist if checklist is _DEFAULT else checklist
        reference, self._items = self._episode_checklist(chosen, goal, info)
        if not self.client.connected:
            self.client.connect()
        self.session = self.client.start_session(
            self.intent or goal,
            start_url=obs["url"],
            checklist=reference,
            observation=observation(obs),
            agent="browsergym",
            holds="browser" if self.hold_commits else None,
            environment=_environment(self.env, kwargs),
        )
        if self.hold_commits:
            self._hold(self.session, obs["url"])
        self._obs, self._thought = obs, None
        self._steps, self._terminated, self._last_reward = 0, False, None
        info = dict(info)
        info["webshepherd"] = {"session_id": self.session.session_id, "checklist": self._items}
        self._info = info
        return obs, info

    @staticmethod
    def _episode_checklist(
        chosen: str | EpisodeChecklist | None, goal: str, info: Info
    ) -> tuple[str | None, list[str] | None]:
        """The reference text to start the session with, and its items when known here."""
        if chosen is None:
            return None, None
        if isinstance(chosen, str):  # reference text: the daemon parses its items
            return chosen, None
        if callable(chosen):
            made = chosen(goal, info.get("task_info") or {})
            try:
                return checklist_text(made), [item.strip() for item in made]
            except ValueError as exc:
                raise ValueError(f"the checklist callable's result for {goal!r}: {exc}") from None
        return checklist_text(chosen), [item.strip() for item in chosen]

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
        ``score``, and run ``action`` unless refused (while the judge scores when
        :attr:`overlaps`). The recording keeps every candidate's judgement and ``action`` as
        the one executed (docs/export-formats.md says which rows it makes).
        ``info["webshepherd"]["candidates"]``: each one's action and reward."""
        session, before = self._require()
        thought, self._thought = self._thought, None
        proposals, pick = _proposals(action, thought, candidates)
        ws: Info = {"session_id": session.session_id, "action": action, "commits": []}
        if self.overlaps:
            scoring = self._call(session.score, proposals, samples=self.samples, approval="never")
            ran = self._execute(action)  # the browser runs while the judge scores
            try:
                scored = scoring.result()
            except JUDGING_ERRORS as exc:  # no judgement: a result; the step ran as asked
                self._unjudged(ws, exc)
            else:
                self._judged(ws, scored, proposals, pick, candidates is not None)
            return self._ran(session, action, thought, ws, ran)
        try:
            self._settle()
            scored = session.score(proposals, samples=self.samples, approval=self.approval)
            if scored.decision.status != "auto" and _held_index(scored) != pick:
                # the daemon's decision covers its best candidate: the executed one alone
                proposals, pick = [proposals[pick]], 0
                scored = session.score(proposals, samples=self.samples, approval=self.approval)
        except JUDGING_ERRORS as exc:  # no judgement: a result, and the step runs as asked
            self._unjudged(ws, exc)
            return self._ran(session, action, thought, ws, self._execute(action))
        self._judged(ws, scored, proposals, pick, candidates is not None)
        chosen = decide(proposals, pick, scored.decision)
        if chosen is None:  # refused: the env does not run it, and keeps its own last info
            ws["refused"] = refusal_info(scored.decision, action)
            obs = before.copy()
            obs["last_action"] = action
            obs["last_action_error"] = refusal_text(scored.decision)
            info = dict(self._info)
            info["webshepherd"] = ws
            return obs, 0.0, False, False, info
        ws["action"] = chosen.action
        return self._ran(session, chosen.action, chosen.thought, ws, self._execute(chosen.action))

    def _unjudged(self, ws: Info, exc: Exception) -> None:
        ws.update(step=None, reward=None, reason=judging_failure(exc), item_probabilities=[])
        ws.update(feedback="", decision="auto", checklist=self._checklist())

    def _judged(
        self, ws: Info, scored: Scored, proposals: list[Candidate], pick: int, listed: bool
    ) -> None:
        """The judgement of the executed candidate (and of every one, when ``listed``)."""
        by_index = {r.index: r for r in scored.results}
        result = by_index.get(pick)
        ws.update(
            step=scored.step,
            reward=result.reward if result else None,
            item_probabilities=[item.model_dump() for item in result.items] if result else [],
            feedback=result.feedback if result else "",
            decision=scored.decision.status,
            checklist=self._checklist(),
        )
        if listed:
            ws["candidates"] = [
                {"action": c.action, "reward": r.reward if (r := by_index.get(i)) else None}
                for i, c in enumerate(proposals)
            ]
        if result is not None and result.reward is None:
            ws["reason"] = no_reward_reason([result])

    def _checklist(self) -> list[str] | None:
        """The items the judge scores against: the episode's, else the session's once the
        daemon has sent it (the client keeps it; asked without waiting)."""
        if self._items is None and self.session is not None:
            with contextlib.suppress(WebShepherdError):
                got = self.session.checklist(timeout=0)
                self._items = [item.title for item in got.items]
        return self._items

    def _execute(self, action: str) -> tuple[StepResult, list[CommitDecided]]:
        """``env.step(action)`` with the gate told what runs; the requests it paused."""
        if self._gate is not None:
            self._gate.trigger(action)
        try:
            result = self.env.step(action)
        finally:
            decided = self._gate.take_decisions() if self._gate is not None else []
            if self._gate is not None:
                self._gate.trigger(None)
        return result, decided

    def _ran(
        self,
        session: SyncSession,
        action: str,
        thought: str | None,
        ws: Info,
        ran: tuple[StepResult, list[CommitDecided]],
    ) -> StepResult:
        """The step's result with what the gate decided; the action and the new page go to
        the daemon on the worker (waited for by the next call that needs them)."""
        (obs, reward, terminated, truncated, info), decided = ran
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
        self._settle()
        self._recording = self._call(self._record, session, action, thought, obs)
        self._obs = obs
        info = dict(info)
        info["webshepherd"] = ws
        self._info = info
        return obs, reward, terminated, truncated, info

    @staticmethod
    def _record(session: SyncSession, action: str, thought: str | None, obs: BrowserGymObs) -> None:
        session.act(action, thought)
        session.observe(obs["url"], observation_text(obs), screenshot_png(obs))

    def _call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """``fn`` on the worker, after the calls sent before it."""
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="webshepherd-browsergym")
        return self._worker.submit(fn, *args, **kwargs)

    def _settle(self) -> None:
        """Wait for the last step's action and page to reach the daemon (its error raised)."""
        if self._recording is not None:
            recording, self._recording = self._recording, None
            recording.result()

    def choose(self, candidates: Sequence[tuple[str | None, str]]) -> tuple[int, BestOfN]:
        """Best-of-n without executing: the index into ``candidates`` and the scored result."""
        session, _ = self._require()
        self._settle()
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
                if self._worker is not None:
                    worker, self._worker = self._worker, None
                    worker.shutdown(wait=True)
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
            try:
                self._settle()
            finally:
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


def _environment(env: gym.Env, reset: Mapping[str, object]) -> dict[str, object] | None:
    """What resets ``env`` to this episode's start, recorded with the session for replays: its
    gym id, and the seed and options its ``reset`` took (None: an env gym did not make)."""
    spec = getattr(env, "spec", None)
    if spec is None or not str(spec.id).startswith("browsergym/"):
        return None
    options = reset.get("options")
    return {
        "kind": "browsergym",
        "task": spec.id,
        "seed": reset.get("seed"),
        "options": options if isinstance(options, dict) else None,
    }


def _held_index(scored: Scored) -> int | None:
    """The candidate the daemon's decision is about (its index, else the best)."""
    return scored.decision.index if scored.decision.index is not None else scored.best
