"""BrowserGym: process rewards for every step of any BrowserGym env, as a gymnasium wrapper.

```python
env = ProcessRewardWrapper(gym.make("browsergym/openended", task_kwargs={...}))
obs, info = env.reset()            # starts a webshepherd session
env.set_thought("The search box is [12].")
obs, reward, terminated, truncated, info = env.step("fill('12', 'usb-c cable')")
info["webshepherd"]["reward"]      # the judge's reward for that action (None: unparsed)
env.close()                         # ends the session: success when the task reward > 0
```

The observation the daemon receives is BrowserGym's own ``flatten_axtree_to_str`` of the
env's ``axtree_object`` with the default flags (what the model was trained on), Chromium's
``InlineTextBox`` nodes left out: byte for byte what the browser extension sends.

Checklist: ``checklist=`` is a reference checklist (``"Checklist 1: ...\nChecklist 2: ..."``,
as WebPRM and WebArena tasks have); without it the model writes one from the intent.

Thought: the one given with :meth:`ProcessRewardWrapper.set_thought` before ``step`` (it is
used once). Approval: with ``approval="always"`` (or ``"auto"`` and the daemon's policy) a
person decides; a rejected action is not executed and ``step`` returns the pre-step
observation with ``last_action_error`` set to ``"rejected by webshepherd: ..."``, task reward
0, ``info["webshepherd"]["decision"] == "rejected"``; an edited action runs instead of the
agent's.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any, Literal

import gymnasium as gym
from browsergym.utils.obs import IGNORED_AXTREE_ROLES, flatten_axtree_to_str
from webshepherd.protocol.agents.best_of_n import BestOfN, action_key, best_of_n_sync, decide
from webshepherd.protocol.agents.environment import ActionError, ActionResult, PageState
from webshepherd.protocol.client.sync import Client, SyncSession
from webshepherd.protocol.common import Candidate
from webshepherd.protocol.version import DEFAULT_URL

Approval = Literal["auto", "always", "never"]
#: Roles left out of the text: BrowserGym's own, and Chromium's InlineTextBox (not in training).
OBSERVATION_IGNORED_ROLES = [*IGNORED_AXTREE_ROLES, "InlineTextBox"]


def observation_text(obs: dict[str, Any]) -> str:
    """The AX-tree text webshepherd scores: BrowserGym's flattening, as the extension sends it."""
    return str(flatten_axtree_to_str(obs["axtree_object"], ignored_roles=OBSERVATION_IGNORED_ROLES))


def screenshot_png(obs: dict[str, Any]) -> dict[str, str] | None:
    """The env's screenshot (an RGB array) as a base64 PNG, or None when the obs has none."""
    shot = obs.get("screenshot")
    if shot is None or getattr(shot, "size", 0) == 0:
        return None
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(shot).save(buf, format="PNG")
    return {"mime": "image/png", "data": base64.b64encode(buf.getvalue()).decode("ascii")}


def observation(obs: dict[str, Any]) -> dict[str, Any]:
    """The protocol's observation (url, AX-tree text, screenshot) for a BrowserGym obs."""
    return {"url": obs["url"], "axtree": observation_text(obs), "screenshot": screenshot_png(obs)}


class ProcessRewardWrapper(gym.Wrapper):
    """Scores each action with the webshepherd daemon before the wrapped env runs it."""

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
    ) -> None:
        super().__init__(env)
        self._own_client = client is None
        self.client = client if client is not None else Client(url or DEFAULT_URL, token)
        self.intent = intent
        self.checklist = checklist
        self.samples = samples
        self.approval: Approval = approval
        self.session: SyncSession | None = None
        self._thought: str | None = None
        self._obs: dict[str, Any] | None = None
        self._task_reward = 0.0

    def set_thought(self, thought: str | None) -> None:
        """The agent's reasoning for the next ``step`` (sent with the action, used once)."""
        self._thought = thought

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self._end("unknown")
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
        )
        self._obs, self._task_reward, self._thought = obs, 0.0, None
        info = dict(info)
        info["webshepherd"] = {"session_id": self.session.session_id}
        return obs, info

    def step(self, action: str) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        session, before = self._require()
        thought, self._thought = self._thought, None
        candidate = Candidate(thought=thought or "", action=action)
        scored = session.score([candidate], samples=self.samples, approval=self.approval)
        result = scored.results[0] if scored.results else None
        ws = {
            "session_id": session.session_id,
            "reward": result.reward if result else None,
            "checklist": [item.model_dump() for item in result.items] if result else [],
            "feedback": result.feedback if result else "",
            "decision": scored.decision.status,
        }
        chosen = decide([candidate], 0, scored.decision)
        if chosen is None:  # rejected: the env does not run it
            obs = dict(before)
            obs["last_action"] = action
            obs["last_action_error"] = f"rejected by webshepherd: {scored.decision.note or ''}"
            return obs, 0.0, False, False, {"webshepherd": ws}
        ws["action"] = chosen.action
        obs, reward, terminated, truncated, info = self.env.step(chosen.action)
        session.client.report_action(session.session_id, chosen.action, chosen.thought)
        session.observe(obs["url"], observation_text(obs), screenshot_png(obs))
        self._obs = obs
        self._task_reward += float(reward)
        info = dict(info)
        info["webshepherd"] = ws
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
        self._end("success" if self._task_reward > 0 else "failure")
        try:
            self.env.close()
        finally:
            if self._own_client:
                self.client.close()

    def _require(self) -> tuple[SyncSession, dict[str, Any]]:
        if self.session is None or self._obs is None:
            raise RuntimeError("call reset() before step() or choose()")
        return self.session, self._obs

    def _end(self, outcome: Literal["success", "failure", "unknown"]) -> None:
        if self.session is not None:
            session, self.session = self.session, None
            session.end(outcome)


def _goal_text(obs: dict[str, Any]) -> str:
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

    def __init__(self, env: Any, **reset_kwargs: Any) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.env = env
        self.reset_kwargs = reset_kwargs
        self._obs: dict[str, Any] | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="browsergym")

    async def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
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
