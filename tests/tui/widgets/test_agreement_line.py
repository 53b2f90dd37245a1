"""The Approvals tab's agreement line under Pilot: a person's decisions folded from the daemon's
events (held request, resolution, the step's scored) against the judge's rewards; a timeout and
the daemon's refusal are not counted; the line follows new decisions."""

from __future__ import annotations

from typing import Any

from webshepherd.tui.app import WebShepherdApp
from webshepherd.tui.state import MonitorState
from webshepherd.tui.widgets.agreement_line import AgreementLine

from tests.tui.helpers import FixedProbe, screen_text, wait_until

STATUS = {"approve": "approved", "reject": "rejected", "edit": "edited", "timeout": "timeout"}


def held(
    rid: str,
    step: int,
    rewards: list[float | None],
    index: int,
    decision: str,
    by: str | None,
    threshold: float | None = 0.3,
) -> list[dict[str, Any]]:
    """The events of one held step: the request, its resolution, the step's scored."""
    actions = [f"click('{step}{k}')" for k in range(len(rewards))]
    known = [r for r in rewards if r is not None]
    best = rewards.index(max(known)) if known else None
    return [
        {"type": "approval.request", "request_id": rid, "session_id": "s1", "step": step,
         "candidate": {"thought": "", "action": actions[index]}, "candidate_index": index,
         "reward": rewards[index], "reason": "always", "expires_in_s": 60.0,
         "threshold": threshold},
        {"type": "approval.resolved", "request_id": rid, "session_id": "s1",
         "decision": decision, "by": by},
        {"type": "scored", "session_id": "s1", "step": step, "best": best,
         "results": [{"index": k, "reward": r, "parsed_samples": 1}
                     for k, r in enumerate(rewards)],
         "candidates": [{"thought": "", "action": a} for a in actions],
         "decision": {"status": STATUS[decision], "index": index, "by": by}},
    ]  # fmt: skip


STARTED = {"type": "session.started", "session_id": "s1", "intent": "Buy a cable",
           "agent": {"name": "shop-agent"}, "source": "agent"}  # fmt: skip
EVENTS = [
    STARTED,
    *held("a1", 0, [0.9, 0.2], 0, "approve", "monitor:tui"),  # top, high, approved
    *held("a2", 1, [0.8, 0.1], 0, "reject", "extension:ext/panel"),  # top, high, rejected
    *held("a3", 2, [0.1, 0.2], 0, "approve", "monitor:tui"),  # not top, low, approved
    *held("a4", 3, [0.05, 0.01], 0, "timeout", None),  # nobody decided: not counted
    *held("a5", 4, [0.95], 0, "reject", "daemon"),  # a guard's refusal: not counted
]
LINE = (
    "judge–person agreement (3 decisions by a person): top pick approved 1/2 · "
    "high reward rejected 1/2 · low reward approved 1/1"
)


def shown(app: WebShepherdApp) -> str:
    """The screen's text with the line's wrapping undone."""
    return " ".join(screen_text(app).split())


async def test_the_line_counts_a_persons_decisions():
    state = MonitorState()
    for e in EVENTS:
        state.fold_raw(e)
    app = WebShepherdApp(connect=False, state=state, probe=FixedProbe())
    app.animation_level = "none"
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.main.ready, what="the main screen")
        await pilot.press("2")  # the Approvals tab
        line = app.main.query_one(AgreementLine)
        await wait_until(pilot, lambda: line.text == LINE, what=f"the line ({line.text!r})")
        await wait_until(pilot, lambda: LINE in shown(app), what="the line on screen")

        # a new decision: an edit of a low top pick; the line follows
        for e in held("a6", 5, [0.2, 0.1], 0, "edit", "monitor:tui"):
            state.fold_raw(e)
        app.main.sync()
        after = (
            "judge–person agreement (4 decisions by a person): top pick approved 1/3 · "
            "high reward rejected 1/2 · low reward approved 1/2"
        )
        await wait_until(pilot, lambda: after in shown(app), what=f"the new line ({line.text!r})")


def test_a_replay_counts_nothing_twice():
    """A catch-up replays the history: decisions are keyed by request, so nothing doubles;
    a resolution seen before its request still counts once the request arrives."""
    state = MonitorState()
    for e in EVENTS + EVENTS:
        state.fold_raw(e)
    assert state.agreement().line() == LINE
    late = MonitorState()
    request, resolved, scored = held("b1", 0, [0.9, 0.2], 0, "reject", "monitor:tui")
    for e in (EVENTS[0], resolved, request, scored):
        late.fold_raw(e)
    got = late.agreement()
    assert (got.decisions, got.top_picks, got.high_rejected) == (1, 1, 1)
    assert late.agreement("another-session").decisions == 0
