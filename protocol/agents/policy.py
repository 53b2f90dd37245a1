"""What a policy is to the agent loop: propose candidates, refine a draft, write a plan.

A policy is a callable ``propose(state, context)`` (sync or async), or an object with
a ``propose`` method and, optionally, ``refine(request)`` (for refinement) and
``plan(intent, state)`` (for the full-plan paradigm). :func:`as_policy` adapts either
to :class:`AsyncPolicy`; sync methods run in a worker thread so they may block.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from webshepherd.protocol.agents.environment import PageState
from webshepherd.protocol.agents.prompts import propose_prompt, refine_prompt
from webshepherd.protocol.client.session import CandidateLike, to_candidates
from webshepherd.protocol.common import Candidate, Turn
from webshepherd.protocol.errors import ErrorCode, WebShepherdError


class PolicyError(WebShepherdError):
    """The policy could not answer (no usable action, an unreachable model endpoint)."""

    code = ErrorCode.MODEL_ERROR


@dataclass(frozen=True)
class PolicyContext:
    """What the policy knows besides the page: the task, the trajectory, the plan."""

    intent: str
    history: tuple[Turn, ...] = ()
    plan: tuple[str, ...] | None = None
    samples: int = 20  # how many answers to sample (duplicates expected)
    rejected: tuple[str, ...] = ()  # actions a person rejected at this step

    def prompt(self, state: PageState) -> str:
        """The proposal prompt for this state."""
        return propose_prompt(
            self.intent,
            state.url,
            state.axtree,
            self.history,
            self.plan,
            state.last_action_error,
        )


@dataclass(frozen=True)
class RefineRequest:
    """A draft the reward model scored low, with its feedback (no reward score in it)."""

    intent: str
    state: PageState
    history: tuple[Turn, ...]
    draft: Candidate
    feedback: str
    round: int = 1  # 1 or 2
    plan: tuple[str, ...] | None = field(default=None)

    def prompt(self) -> str:
        """The paper's refinement prompt (Figure 23) for this draft."""
        return refine_prompt(
            self.intent,
            self.state.url,
            self.state.axtree,
            self.history,
            self.draft.thought,
            self.draft.action,
            self.feedback,
        )


_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
_ACTION = re.compile(r"<action>(.*?)</action>", re.DOTALL)


def parse_answer(text: str) -> Candidate | None:
    """``<think>…</think><action>…</action>`` → a candidate; None without an action."""
    actions = _ACTION.findall(text)
    action = actions[-1].strip() if actions else ""
    if not action:
        return None
    thought = _THINK.search(text)
    return Candidate(thought=thought.group(1).strip() if thought else "", action=action)


_NUMBERED = re.compile(r"^\s*(?:step\s*)?\d+\s*[.):]\s*(.+?)\s*$", re.IGNORECASE)


def parse_plan(text: str) -> list[str]:
    """The steps of a numbered plan ("1. …", "2) …", "Step 3: …"), markup stripped."""
    steps = []
    for line in text.splitlines():
        m = _NUMBERED.match(line)
        if m:
            steps.append(m.group(1).replace("**", "").strip())
    return steps


async def _call(fn: Any, *args: Any) -> Any:
    target = fn if inspect.isroutine(fn) else type(fn).__call__  # a callable object
    if inspect.iscoroutinefunction(target):
        return await fn(*args)
    out = await asyncio.to_thread(fn, *args)
    return await out if inspect.isawaitable(out) else out


class AsyncPolicy:
    """A policy with async ``propose`` / ``refine`` / ``plan`` around any user policy."""

    def __init__(self, policy: Any) -> None:
        self.inner = policy
        self._propose = getattr(policy, "propose", None) or policy
        if not callable(self._propose):
            raise TypeError("a policy is a callable propose(state, context) or has .propose")
        self._refine = getattr(policy, "refine", None)
        self._plan = getattr(policy, "plan", None)

    @property
    def can_refine(self) -> bool:
        return callable(self._refine)

    @property
    def can_plan(self) -> bool:
        return callable(self._plan)

    async def propose(self, state: PageState, context: PolicyContext) -> list[Candidate]:
        out = await _call(self._propose, state, context)
        candidates = to_candidates(_as_list(out))
        if not candidates:
            raise PolicyError("the policy proposed no action")
        return candidates

    async def refine(self, request: RefineRequest) -> Candidate | None:
        """The refined candidate, or None when the policy gave no usable one."""
        if not self.can_refine:
            raise PolicyError("this policy has no refine(request) method")
        out = await _call(self._refine, request)
        if out is None:
            return None
        return to_candidates([out])[0]

    async def plan(self, intent: str, state: PageState) -> list[str]:
        if not self.can_plan:
            raise PolicyError("the plan paradigm needs a policy with a plan(intent, state) method")
        steps = [str(s) for s in await _call(self._plan, intent, state)]
        if not steps:
            raise PolicyError("the policy wrote an empty plan")
        return steps


def _as_list(out: Any) -> Sequence[CandidateLike]:
    if isinstance(out, Candidate | str | tuple | dict):
        return [out]
    return list(out or [])


def as_policy(policy: Any) -> AsyncPolicy:
    """Adapt a callable or a policy object (idempotent)."""
    return policy if isinstance(policy, AsyncPolicy) else AsyncPolicy(policy)
