"""A BrowserGym env as an agent-loop ``Environment`` (:mod:`webshepherd.protocol.agents`).
Public through :mod:`webshepherd.integrations.browsergym`."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from webshepherd.integrations.browsergym_obs import (
    BrowserGymEnv,
    BrowserGymObs,
    observation_text,
    screenshot_png,
)
from webshepherd.protocol.agents.environment import ActionError, ActionResult, PageState

P = ParamSpec("P")
T = TypeVar("T")


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
