"""Checklist progress and the first bad steps, on recorded judgements (no model: the levels
and rewards are given, so which step is named is decided by construction)."""

from __future__ import annotations

from webshepherd.protocol.common import ItemProbs
from webshepherd.protocol.progress import (
    StallTracker,
    StepJudgement,
    first_bad_steps,
    item_levels,
)


def step(n: int, reward: float | None, levels: dict[int, int], feedback: str = "") -> StepJudgement:
    return StepJudgement(n, reward, levels, feedback or f"feedback {n}")


def test_item_levels_are_the_likeliest_labels():
    items = [
        ItemProbs(index=1, yes=0.7, in_progress=0.2, no=0.1),
        ItemProbs(index=2, yes=0.2, in_progress=0.5, no=0.3),
        ItemProbs(index=3, yes=0.1, in_progress=0.1, no=0.8),
    ]
    assert item_levels(items) == {1: 2, 2: 1, 3: 0}


def test_progress_stops_where_no_item_advances():
    steps = [
        step(0, 0.6, {1: 1, 2: 0}),
        step(1, 0.8, {1: 2, 2: 0}),
        step(2, 0.8, {1: 2, 2: 0}, "the agent scrolled instead of opening the cart"),
        step(3, 0.9, {1: 2, 2: 2}),
    ]
    bad = first_bad_steps(steps)
    assert bad.progress is not None
    assert (bad.progress.step, bad.progress.kind) == (2, "progress_stopped")
    assert bad.progress.feedback == "the agent scrolled instead of opening the cart"
    assert "1:Yes 2:No" in bad.progress.detail
    assert bad.reward is None  # every reward at or above the running level


def test_progress_falling_is_named_before_a_later_stop():
    steps = [
        step(4, 0.5, {1: 1, 2: 0}),
        step(5, 0.7, {1: 2, 2: 1}),
        step(6, 0.4, {1: 0, 2: 2}),  # item 2 advanced, but item 1 fell: still bad
    ]
    bad = first_bad_steps(steps).progress
    assert bad is not None and (bad.step, bad.kind) == (6, "progress_fell")
    assert "item 1 Yes → No" in bad.detail


def test_the_first_judged_step_is_the_baseline():
    """Nothing came before it: even advancing nothing, it is not where progress stopped."""
    steps = [step(0, 0.2, {1: 0, 2: 0}), step(1, 0.3, {1: 1, 2: 0}), step(2, 0.3, {1: 1, 2: 0})]
    bad = first_bad_steps(steps).progress
    assert bad is not None and bad.step == 2
    assert first_bad_steps(steps[:1]).progress is None


def test_reward_drop_under_the_running_level():
    steps = [
        step(0, 0.8, {}),
        step(1, 0.75, {}),  # within the margin of 0.8
        step(2, None, {}),  # no reward: skipped
        step(3, 0.2, {}, "clicked Deals, which has no cables"),
        step(4, 0.1, {}),
    ]
    bad = first_bad_steps(steps).reward
    assert bad is not None and (bad.step, bad.kind) == (3, "reward_drop")
    assert bad.reward == 0.2 and abs((bad.running_level or 0) - 0.775) < 1e-9
    assert bad.feedback == "clicked Deals, which has no cables"
    assert first_bad_steps(steps[:2]).reward is None
    # the margin decides what counts as a drop
    assert first_bad_steps(steps[:2], margin=0.0).reward.step == 1  # type: ignore[union-attr]


def test_no_judgements_no_bad_steps():
    bad = first_bad_steps([])
    assert (bad.progress, bad.reward) == (None, None)
    assert bad.lines() == [
        "first bad step (progress): none",
        "first bad step (reward): none",
    ]
    assert bad.as_dict() == {"progress": None, "reward": None}


def test_stall_tracker_counts_steps_since_an_advance():
    t = StallTracker()
    assert t.update(0, {1: 1, 2: 0}) is True and t.since == 0
    assert t.update(1, {1: 1, 2: 0}) is False and t.since == 1
    assert t.update(2, {1: 0, 2: 0}) is False and t.since == 2  # a fall is no advance
    assert t.update(3, {1: 1, 2: 0}) is False and t.since == 3  # back to the best: not new
    assert t.update(4, {1: 2, 2: 0}) is True and (t.since, t.last_advance) == (0, 4)
    copy = t.copy()
    copy.update(5, {1: 2, 2: 0})
    assert (t.since, copy.since) == (0, 1)
