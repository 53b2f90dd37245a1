"""Live process signals, computed per executed action (pure; the session machine calls it).

* ``repeated_action``: the same action executed again while the observation (URL and AX
  tree) has not changed since the previous execution: the brittle loop both seed papers
  describe (the planning paper stops its agent after three such repeats).
* ``element_mismatch``: the action the agent announced in its thought ("… the next action
  I will perform is ```click [12]```") is not the executed one (Definition 4.5 live).
* ``plan_adherence``: for ``plan`` agents that declared their plan, whether the executed
  action follows the current plan step (or the one after it, a skipped step). Plan steps
  are prose and actions are commands, so the match is lexical: enough of the plan step's
  content words occur in the action and its thought (``PLAN_OVERLAP``).
* ``stalled``: no checklist item has advanced for ``agent.stalled_after`` executed steps in a
  row (default 3), read from the judgement of the executed action (the step's scored
  candidate with that action; a step without one is not counted): the general form of the
  loop ``repeated_action`` catches. Sent again after each further step without progress.
  What "advanced" means lives in :mod:`webshepherd.protocol.progress`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from webshepherd.daemon.sessions.plans import normalize, planned_from_thought
from webshepherd.protocol.common import AgentInfo
from webshepherd.protocol.progress import Levels, StallTracker
from webshepherd.protocol.replies import Signal
from webshepherd.protocol.steps import step_label

PLAN_OVERLAP = 0.5
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "to",
        "on",
        "in",
        "of",
        "for",
        "and",
        "or",
        "at",
        "by",
        "with",
        "into",
        "from",
        "then",
        "page",
        "button",
        "link",
        "field",
        "click",
        "type",
        "fill",
        "select",
        "go",
        "enter",
    ]
)


def observation_key(url: str | None, axtree: str | None) -> tuple[str, str]:
    """What makes two observations the same: compared with ``==`` when an action comes
    (equal strings that are one object compare at once; no hashing of big trees on every
    observe)."""
    return (url or "", axtree or "")


def _words(text: str) -> set[str]:
    return {w for w in normalize(text).split() if w not in _STOP}


def follows(plan_step: str, action: str, thought: str | None) -> bool:
    """Whether an action (with its thought) carries out a plan step, lexically."""
    want = _words(plan_step)
    if not want:
        return False
    have = _words(f"{action} {thought or ''}")
    return len(want & have) / len(want) >= PLAN_OVERLAP


def _same(a: str, b: str) -> bool:
    return re.sub(r"\s+", "", a) == re.sub(r"\s+", "", b)


@dataclass
class _Track:
    observation: tuple[str, str] | None = None
    last_action: str | None = None
    last_observation: tuple[str, str] | None = None
    repeats: int = 1
    announced: int = 0
    announced_ok: int = 0
    plan_pos: int = 0
    plan_checked: int = 0
    plan_ok: int = 0
    stall: StallTracker = field(default_factory=StallTracker)


@dataclass
class SignalBook:
    """Per-session state of the signals (in memory; starts afresh after a daemon restart)."""

    tracks: dict[str, _Track] = field(default_factory=dict)

    def observed(self, session_id: str, url: str | None, axtree: str | None) -> None:
        self.tracks.setdefault(session_id, _Track()).observation = observation_key(url, axtree)

    def forget(self, session_id: str) -> None:
        self.tracks.pop(session_id, None)

    def rebuild(
        self,
        session_id: str,
        history: Iterable[tuple[str, str | None, str | None, int]],
        agent: AgentInfo,
        progress: Mapping[int, Mapping[str, Levels]] | None = None,
    ) -> None:
        """The session's signal state from its record (after a restart or an eviction):
        ``("observed", url, axtree, step)`` and ``("action", action, thought, step)`` in the
        order they happened, replayed through :meth:`observed` and :meth:`action` (signals
        dropped); ``progress``: step → action → checklist levels of its judgement."""
        self.tracks.pop(session_id, None)
        for kind, a, b, step in history:
            if kind == "observed":
                self.observed(session_id, a, b)
            else:
                levels = (progress or {}).get(step, {}).get(a or "")
                self.action(session_id, step, a or "", b, agent, levels)

    def snapshot(self, session_id: str) -> _Track | None:
        t = self.tracks.get(session_id)
        return None if t is None else replace(t, stall=t.stall.copy())

    def restore(self, session_id: str, track: _Track | None) -> None:
        if track is None:
            self.tracks.pop(session_id, None)
        else:
            self.tracks[session_id] = track

    def action(
        self,
        session_id: str,
        step: int,
        action: str,
        thought: str | None,
        agent: AgentInfo,
        levels: Levels | None = None,
    ) -> list[Signal]:
        """The signals of one executed action; ``levels``: the checklist item levels of its
        judgement at this step (None: not judged)."""
        t = self.tracks.setdefault(session_id, _Track())
        out: list[Signal] = []
        # repeated action on the same observation
        if (
            t.last_action is not None
            and _same(t.last_action, action)
            and t.observation is not None
            and t.observation == t.last_observation
        ):
            t.repeats += 1
            out.append(
                Signal(
                    session_id=session_id,
                    step=step,
                    kind="repeated_action",
                    action=action,
                    ok=False,
                    repeats=t.repeats,
                    detail=f"executed {t.repeats} times in a row on an unchanged page",
                )
            )
        else:
            t.repeats = 1
        t.last_action, t.last_observation = action, t.observation
        # planned (announced) vs executed
        planned = planned_from_thought(thought)
        if planned is not None:
            t.announced += 1
            match = _same(normalize(planned), normalize(action))
            t.announced_ok += int(match)
            if not match:
                out.append(
                    Signal(
                        session_id=session_id,
                        step=step,
                        kind="element_mismatch",
                        action=action,
                        ok=False,
                        planned=planned,
                        rate=t.announced_ok / t.announced,
                        detail="the executed action is not the one announced in the thought",
                    )
                )
        # adherence to a declared plan
        plan = agent.plan or []
        if agent.planning == "plan" and plan and t.plan_pos < len(plan):
            prev = t.plan_pos
            t.plan_checked += 1
            hit = next(
                (
                    k
                    for k in (prev, prev + 1)
                    if k < len(plan) and follows(plan[k], action, thought)
                ),
                None,
            )
            if hit is None:
                detail = f"does not follow plan step {prev + 1}"
                index = prev
            else:
                t.plan_ok += 1
                t.plan_pos = hit + 1
                index = hit
                detail = (
                    f"follows plan step {hit + 1}"
                    if hit == prev
                    else f"skips plan step {prev + 1}, follows step {hit + 1}"
                )
            out.append(
                Signal(
                    session_id=session_id,
                    step=step,
                    kind="plan_adherence",
                    action=action,
                    ok=hit is not None,
                    planned=plan[index],
                    plan_step=index + 1,
                    rate=t.plan_ok / t.plan_checked,
                    detail=detail,
                )
            )
        # no checklist progress for k judged steps
        if levels and not t.stall.update(step, levels) and t.stall.since >= agent.stalled_after:
            last = t.stall.last_advance
            out.append(
                Signal(
                    session_id=session_id,
                    step=step,
                    kind="stalled",
                    action=action,
                    ok=False,
                    stalled_steps=t.stall.since,
                    detail=f"no checklist item advanced for {t.stall.since} executed steps"
                    + (f" (last advance at {step_label(last)})" if last is not None else ""),
                )
            )
        return out
