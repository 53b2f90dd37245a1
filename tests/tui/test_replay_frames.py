"""The replay's frames: one per step (protocol/steps.py), index 0 included."""

from __future__ import annotations

from webshepherd.tui.screens.replay import frame_ends


def _ev(kind: str, step: int | None = None) -> dict[str, object]:
    return {"type": kind} if step is None else {"type": kind, "step": step}


def test_one_frame_per_step_scored_or_acted_at():
    events = [
        _ev("session.started"),
        _ev("observed", 0),
        _ev("scored", 0),  # index 0 is a step like any other
        _ev("action", 0),
        _ev("observed", 1),  # only observed: shows with the step after it
        _ev("observed", 2),
        _ev("scored", 2),
        _ev("action", 2),
        _ev("observed", 3),  # the page the task ended on: with the last step
        _ev("session.ended"),
    ]
    assert frame_ends(events) == [4, 10]


def test_a_session_with_nothing_scored_is_one_frame():
    assert frame_ends([_ev("session.started"), _ev("observed", 0)]) == [2]
