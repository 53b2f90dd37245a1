"""Replay a recorded BrowserGym run: restore its state before any step, and try other actions
from there (:mod:`webshepherd.integrations.blame` proves a run's first bad step with it).

A recording knows how to reset its environment when the
:class:`~webshepherd.integrations.browsergym.ProcessRewardWrapper` started its session: the
task's gym id, and the ``seed`` and ``options`` its ``reset`` took (``session.start``'s
``environment``). :func:`load` reads them, with each step's page, executed action and scored
candidates, from the recording (the daemon's data folder, read through
:class:`~webshepherd.daemon.recorder.history.History`). A session recorded without them, or
without a seed, cannot be reset: :func:`load` refuses it in one sentence
(:class:`CannotReset`), and nothing is guessed.

:meth:`Replayer.restore` resets the env (the same task, seed and options) and runs the
recorded actions before step ``k``; each page it reaches is checked against the recording:
the observation text BrowserGym flattens (what the wrapper recorded, byte for byte) must have
the same SHA-256, else the step is listed in :attr:`Run.drift` with the two texts' similarity
(``difflib``'s ratio): a drifting replay is reported, never trusted silently.

Nothing leaves for the world during a replay: a
:class:`~webshepherd.integrations.commit_gate.CommitGate` on the env's browser context answers
every request that would commit as a session in mode ``stop`` does: refused, unless its origin
is one of ``sandbox`` (the operator's sandbox origins, named by the caller; flagged and let
go). :attr:`Run.refused` counts the refusals.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from webshepherd.integrations.browsergym import BrowserGymEnv, BrowserGymObs, observation_text
from webshepherd.protocol.commits import request_digest, url_origin
from webshepherd.protocol.common import DecisionInfo, EnvironmentInfo, HeldRequest
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.replies import CommitDecided


class CannotReset(WebShepherdError):
    """A recorded session whose environment cannot be reset (said in one sentence)."""


class Agent(Protocol):
    """BrowserGym's and AgentLab's agent shape: ``get_action(obs)`` returns an action, or an
    ``(action, info)`` pair."""

    def get_action(self, obs: Any) -> Any: ...


AgentFactory = Callable[[], Agent]


@dataclass(frozen=True)
class RecordedStep:
    """One recorded step: the page before it, the action executed, and the candidates the
    judge scored there (best by the judge first; the executed one among them)."""

    step: int
    page: str
    action: str | None
    candidates: list[tuple[str, float | None]]


@dataclass(frozen=True)
class Recorded:
    """What a replay needs of a recorded session."""

    session_id: str
    environment: EnvironmentInfo
    steps: list[RecordedStep]  # every executed step, in order
    final_page: str | None  # the page after the last executed action, when recorded
    outcome: str | None
    judge_guess: int | None  # the first bad step the judge's rewards name (rescore's rule)

    @property
    def actions(self) -> list[str]:
        return [s.action for s in self.steps if s.action is not None]


def load(session_id: str, data_dir: str | os.PathLike[str] | None = None) -> Recorded:
    """The recorded session ``session_id`` from the recording in ``data_dir`` (default:
    :func:`~webshepherd.daemon.config.default_data_dir`: ``$WEBSHEPHERD_DATA_DIR``, else
    the daemon's own). A session whose environment cannot be reset is
    :class:`CannotReset`; an unknown one is a :class:`WebShepherdError`."""
    from webshepherd.daemon.config import DB_NAME, default_data_dir
    from webshepherd.daemon.offline.report.render import judgements
    from webshepherd.daemon.recorder.history import History
    from webshepherd.protocol.progress import first_bad_steps

    folder = Path(data_dir) if data_dir is not None else default_data_dir()
    history = History.open(folder / DB_NAME)
    try:
        tl = history.timeline(session_id)
    finally:
        history.close()
    if tl is None:
        raise WebShepherdError(f"no session {session_id} in the recording at {folder}")
    env = tl.environment
    if env is None:
        raise CannotReset(
            f"this session's environment cannot be reset: session {session_id} was recorded "
            "without one (only BrowserGym envs run through ProcessRewardWrapper record it)"
        )
    if env.seed is None:
        raise CannotReset(
            f"this session's environment cannot be reset: {env.task} was reset without a "
            "seed, so its start is not known (pass reset(seed=...))"
        )
    steps: list[RecordedStep] = []
    final: str | None = None
    for st in tl.steps:
        action = st.executed[-1].action if st.executed else None
        if action is None:
            final = st.axtree or None
            continue
        scoring = st.scoring
        ranked: list[tuple[str, float | None]] = []
        if scoring is not None:
            got = [(c.candidate.action, c.result.reward) for c in scoring.candidates]
            ranked = sorted(got, key=lambda c: -1.0 if c[1] is None else -c[1])
        steps.append(RecordedStep(st.step, st.axtree, action, ranked))
    bad = first_bad_steps(judgements(tl))
    guess = bad.reward or bad.progress
    return Recorded(
        session_id,
        env,
        steps,
        final,
        tl.summary.outcome,
        guess.step if guess is not None else None,
    )


def page_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Drift:
    """A replayed page that is not the recorded one: where, and how similar (0..1)."""

    step: int
    similarity: float

    def as_dict(self) -> dict[str, object]:
        return {"step": self.step, "similarity": round(self.similarity, 4)}


@dataclass
class Run:
    """One replay: the recorded actions to step ``k``, then ``tried`` (a candidate, or None:
    the agent's own choice), then the agent. ``won``: the env terminated with a reward > 0."""

    k: int
    tried: str | None
    won: bool = False
    reward: float = 0.0
    terminated: bool = False
    actions: list[str] = field(default_factory=list)  # what ran after the recorded prefix
    drift: list[Drift] = field(default_factory=list)
    checked: int = 0  # replayed pages compared with the recording
    refused: int = 0  # writes the gate refused (mode stop)
    error: str | None = None  # the agent failed, or the prefix could not run

    def as_dict(self) -> dict[str, object]:
        return {
            "from_step": self.k,
            "tried": self.tried,
            "won": self.won,
            "reward": self.reward,
            "terminated": self.terminated,
            "actions": self.actions,
            "drift": [d.as_dict() for d in self.drift],
            "pages_checked": self.checked,
            "refused_writes": self.refused,
            **({"error": self.error} if self.error else {}),
        }


def stop_mode(session_id: str, sandbox: Sequence[str] = ()) -> Callable[[HeldRequest], Any]:
    """A gate's ``decide`` that answers as mode ``stop``: every request that would commit is
    refused, unless its origin is one of ``sandbox`` (flagged and let go)."""
    allowed = {o for o in map(url_origin, sandbox) if o is not None}

    def decide(request: HeldRequest) -> CommitDecided:
        origin = url_origin(request.url)
        let_go = origin is not None and origin in allowed
        info = DecisionInfo(
            status="approved" if let_go else "rejected",
            by="replay",
            note=(
                f"a sandbox origin ({origin}): it runs during a replay"
                if let_go
                else "a replay sends no write outside the sandbox origins (mode stop)"
            ),
            decider="sandbox" if let_go else "mode",
            mode="stop",
            way_out=None if let_go else "name its origin a sandbox origin of the replay",
        )
        return CommitDecided(
            session_id=session_id,
            request=request,
            request_digest=request_digest(request),
            decision=info,
            flagged=let_go,
        )

    return decide


def make_env(environment: EnvironmentInfo, chromium: str | None = None) -> Any:
    """A fresh headless env of the recorded task (its settings from the environment, e.g.
    ``MINIWOB_URL``), on the machine's Chromium (``chromium``, else ``$CHROMIUM``, else
    ``chromium`` on ``PATH``; :func:`use_chromium` runs first unless it ran already)."""
    import gymnasium as gym
    from webshepherd.integrations.browsergym import use_chromium

    task = environment.task
    if task.startswith("browsergym/miniwob."):
        import browsergym.miniwob  # noqa: F401  (registers the ids)
    elif task.startswith("browsergym/webshepherd.shop"):
        import webshepherd.integrations.shop_task  # noqa: F401  (the bundled shop's ids)
    elif task.startswith("browsergym/"):
        with contextlib.suppress(ImportError):
            __import__("browsergym." + task.split("/", 1)[1].split(".", 1)[0])
    exe = chromium or os.environ.get("CHROMIUM") or shutil.which("chromium")
    if "PLAYWRIGHT_BROWSERS_PATH" not in os.environ:  # else use_chromium ran already
        # (it starts playwright: in a process whose BrowserGym started it, that fails)
        exe = use_chromium(exe)
    kwargs = {"executable_path": exe} if exe else {}
    return gym.make(task, headless=True, pw_chromium_kwargs=kwargs)


def action_of(got: Any) -> str:
    """The action from an agent's ``get_action`` result (an action or ``(action, info)``)."""
    action = got[0] if isinstance(got, tuple) else got
    if not isinstance(action, str):
        raise TypeError(f"get_action returned {type(action).__name__}, not an action string")
    return action


class Replayer:
    """Replays of one recorded session on one env (reset between replays).

    ``env``: the env to replay on (default: :func:`make_env` of the recording's task);
    ``sandbox``: origins whose writes may leave; ``max_steps``: the most actions a replay
    runs after the recorded prefix (default: twice the run's length, at least 5)."""

    def __init__(
        self,
        recorded: Recorded,
        *,
        env: BrowserGymEnv | None = None,
        sandbox: Sequence[str] = (),
        max_steps: int | None = None,
    ) -> None:
        self.recorded = recorded
        self.env: Any = env if env is not None else make_env(recorded.environment)
        self.sandbox = tuple(sandbox)
        self.max_steps = max_steps or max(5, 2 * len(recorded.steps))
        self.replays = 0
        self.refused = 0  # across replays
        self._gate: Any = None

    def close(self) -> None:
        self._detach()
        self.env.close()

    def __enter__(self) -> Replayer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _detach(self) -> None:
        if self._gate is not None:
            gate, self._gate = self._gate, None
            with contextlib.suppress(Exception):  # its context may have closed with the env
                gate.detach()

    def _reset(self) -> BrowserGymObs:
        from webshepherd.integrations.commit_gate import CommitGate

        env = self.recorded.environment
        self._detach()
        obs, _ = self.env.reset(seed=env.seed, options=env.options)
        context = getattr(self.env.unwrapped, "context", None)
        if context is None:
            raise CannotReset(
                "this session's environment cannot be reset: the env has no Playwright "
                "context for the replay's gate to hold writes on"
            )
        self._gate = CommitGate(stop_mode(f"replay-{self.recorded.session_id}", self.sandbox))
        self._gate.attach(context, start_url=obs["url"])
        return obs

    def _step(self, run: Run, action: str) -> tuple[BrowserGymObs, float, bool]:
        self._gate.trigger(action)
        try:
            obs, reward, terminated, truncated, _ = self.env.step(action)
        finally:
            decided = self._gate.take_decisions()
            self._gate.trigger(None)
        refused = sum(d.decision.status != "approved" for d in decided)
        run.refused += refused
        self.refused += refused
        return obs, float(reward), bool(terminated or truncated)

    def _check(self, run: Run, step: int, obs: BrowserGymObs, recorded: str | None) -> None:
        if recorded is None:
            return
        run.checked += 1
        got = observation_text(obs)
        if page_digest(got) != page_digest(recorded):
            ratio = difflib.SequenceMatcher(None, got, recorded, autojunk=False).ratio()
            run.drift.append(Drift(step, ratio))

    def run(self, k: int, tried: str | None, agent: AgentFactory | None) -> Run:
        """Restore the state before step ``k`` (the recorded actions before it, each page
        checked), run ``tried`` (None: the agent's own choice), then let a fresh agent of
        ``agent`` go on until the env terminates or ``max_steps`` actions ran (None: stop
        after ``tried``). Counts as one replay."""
        steps = self.recorded.steps
        if not 0 <= k <= len(steps):
            raise ValueError(f"step {k}: the run has steps 0..{len(steps)}")
        self.replays += 1
        run = Run(k, tried)
        obs = self._reset()
        reward, done = 0.0, False
        for i in range(k):
            self._check(run, i, obs, steps[i].page)
            obs, reward, done = self._step(run, steps[i].action or "")
            if done and i < k - 1:
                run.error = f"the env terminated at recorded step {i}, before step {k}"
                run.terminated, run.reward, run.won = True, reward, reward > 0
                return run
        final = steps[k].page if k < len(steps) else self.recorded.final_page
        self._check(run, k, obs, final)
        if done:  # the recorded run ended here: nothing more can run
            run.terminated, run.reward, run.won = True, reward, reward > 0
            return run
        me = agent() if agent is not None else None
        pending = tried
        while len(run.actions) < self.max_steps:
            if pending is None:
                if me is None:
                    break
                try:
                    pending = action_of(me.get_action(obs))
                except Exception as exc:  # the agent's own failure is the replay's result
                    run.error = f"the agent failed: {type(exc).__name__}: {exc}"
                    break
            run.actions.append(pending)
            obs, reward, done = self._step(run, pending)
            pending = None
            if done:
                run.terminated, run.reward, run.won = True, reward, reward > 0
                break
        return run
