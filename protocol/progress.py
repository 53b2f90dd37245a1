"""Checklist progress along a trajectory and where it first went wrong (pure).

One home for what "an item advanced" means, shared by the daemon's live ``stalled`` signal
(:class:`StallTracker`), the HTML report, the TUI replay and ``webshepherd rescore``
(:func:`first_bad_steps`).

An item's level is its likeliest label in the judgement of the executed action: No 0,
In Progress 1, Yes 2 (ties as :attr:`ItemProbs.likeliest`). An item *advances* at a step when
its level rises above the highest it had at any earlier judged step (before the first one:
0). Levels, not probabilities, so a judge's small wobbles are no progress.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from webshepherd.protocol.common import ItemProbs
from webshepherd.protocol.steps import step_label

LEVELS: dict[str, int] = {"no": 0, "in_progress": 1, "yes": 2}
LEVEL_NAMES = ("No", "In Progress", "Yes")
#: How far under the running level (the mean of the earlier steps' rewards) a reward must
#: fall to count as a drop: the judge's sampling noise stays under it.
REWARD_DROP_MARGIN = 0.1

Levels = Mapping[int, int]
BadKind = Literal["progress_stopped", "progress_fell", "reward_drop"]


def item_levels(items: Iterable[ItemProbs]) -> dict[int, int]:
    """Checklist item index → level of its likeliest label."""
    return {it.index: LEVELS[it.likeliest] for it in items}


def advanced(best: Levels, levels: Levels) -> list[int]:
    """The items of ``levels`` above the highest level they had before (``best``)."""
    return sorted(i for i, level in levels.items() if level > best.get(i, 0))


def fell(previous: Levels, levels: Levels) -> list[int]:
    """The items whose level is lower than at the previous judged step."""
    return sorted(i for i, level in levels.items() if level < previous.get(i, level))


@dataclass
class StallTracker:
    """Executed steps since a checklist item last advanced (the live ``stalled`` signal)."""

    best: dict[int, int] = field(default_factory=dict)
    since: int = 0  # judged executed steps in a row without an advance
    last_advance: int | None = None  # the step of the latest advance

    def update(self, step: int, levels: Levels) -> bool:
        """Count one judged executed step; True when an item advanced."""
        moved = advanced(self.best, levels)
        for i, level in levels.items():
            self.best[i] = max(level, self.best.get(i, 0))
        if moved:
            self.since, self.last_advance = 0, step
        else:
            self.since += 1
        return bool(moved)

    def copy(self) -> StallTracker:
        return StallTracker(dict(self.best), self.since, self.last_advance)


@dataclass(frozen=True)
class StepJudgement:
    """The judgement of one step's executed action: its reward, its checklist item levels
    (empty when it had none) and the judge's feedback."""

    step: int
    reward: float | None
    levels: Levels
    feedback: str = ""


@dataclass(frozen=True)
class BadStep:
    """A step where the trajectory first went wrong, and why."""

    step: int
    kind: BadKind
    detail: str
    feedback: str
    reward: float | None = None
    running_level: float | None = None  # reward_drop: the mean of the earlier rewards

    def as_dict(self) -> dict[str, object]:
        return {
            "step": self.step,
            "kind": self.kind,
            "detail": self.detail,
            "feedback": self.feedback,
            "reward": self.reward,
            "running_level": self.running_level,
        }


@dataclass(frozen=True)
class FirstBadSteps:
    """``progress``: where checklist progress first stopped or fell; ``reward``: where the
    executed action's reward first fell under the session's running level."""

    progress: BadStep | None
    reward: BadStep | None

    def as_dict(self) -> dict[str, object]:
        return {
            "progress": None if self.progress is None else self.progress.as_dict(),
            "reward": None if self.reward is None else self.reward.as_dict(),
        }

    def lines(self) -> list[str]:
        """One line each, for terminals and summaries (the feedback is not included)."""
        out = []
        for label, bad in (("progress", self.progress), ("reward", self.reward)):
            out.append(
                f"first bad step ({label}): none"
                if bad is None
                else f"first bad step ({label}): {step_label(bad.step)}: {bad.detail}"
            )
        return out


def _name(level: int) -> str:
    return LEVEL_NAMES[level]


def first_bad_steps(
    steps: Sequence[StepJudgement], margin: float = REWARD_DROP_MARGIN
) -> FirstBadSteps:
    """The first bad steps of a trajectory, from its judged steps in order.

    Both compare a step with the ones before it, so the first judged step is the baseline,
    never itself named. Progress: the first later step with checklist levels where an item
    fell below its level at the previous such step, or else where no item rose above its
    highest level so far. Reward: the first step whose reward is more than ``margin`` under
    the mean of the earlier steps' rewards (steps without a reward are skipped).
    """
    progress: BadStep | None = None
    best: dict[int, int] = {}
    previous: Levels = {}
    for s in steps:
        if progress is not None:
            break
        if not s.levels:
            continue
        down = fell(previous, s.levels)
        up = advanced(best, s.levels)
        if not previous:  # the baseline
            pass
        elif down:
            what = ", ".join(f"item {i} {_name(previous[i])} → {_name(s.levels[i])}" for i in down)
            progress = BadStep(s.step, "progress_fell", f"checklist fell: {what}", s.feedback)
        elif not up:
            where = " ".join(f"{i}:{_name(level)}" for i, level in sorted(s.levels.items()))
            progress = BadStep(
                s.step,
                "progress_stopped",
                f"no checklist item advanced ({where})",
                s.feedback,
            )
        for i, level in s.levels.items():
            best[i] = max(level, best.get(i, 0))
        previous = s.levels
    reward: BadStep | None = None
    earlier: list[float] = []
    for s in steps:
        if s.reward is None:
            continue
        if earlier:
            running = sum(earlier) / len(earlier)
            if s.reward < running - margin:
                reward = BadStep(
                    s.step,
                    "reward_drop",
                    f"reward {s.reward:.2f} under the running level {running:.2f}",
                    s.feedback,
                    reward=s.reward,
                    running_level=running,
                )
                break
        earlier.append(s.reward)
    return FirstBadSteps(progress, reward)
