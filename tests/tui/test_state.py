"""Folding daemon events into the monitor's state."""

from __future__ import annotations

from webshepherd.protocol.replies import Session
from webshepherd.protocol.union import SERVER_ADAPTER
from webshepherd.tui.state import MonitorState

from tests.tui.events import load_recorded, recorded, session_events, stats_event


def folded(events) -> MonitorState:
    state = MonitorState()
    for e in events:
        state.fold_raw(e)
    return state


def test_recording_is_current():
    assert load_recorded() == recorded(), "run `python -m tests.tui.events` and commit"


def test_sessions_steps_rewards_and_order():
    state = folded(session_events("a", 3, seed=1) + session_events("b", 2, seed=2, outcome=None))
    assert [v.session_id for v in state.ordered()] == ["b", "a"]  # newest first
    a, b = state.sessions["a"], state.sessions["b"]
    assert (a.state, a.outcome, a.state_label) == ("ended", "success", "ended: success")
    assert (b.state, b.step_count, len(b.scored_steps)) == ("running", 2, 2)
    assert a.agent == "shop-agent" and a.intent.startswith("Buy")
    step = a.steps[2]
    rewards = [c.result.reward for c in step.candidates]
    assert step.best == max(range(3), key=lambda k: rewards[k] or -1)
    assert step.best_reward == rewards[step.best]
    assert step.executed == step.candidates[step.best].candidate.action
    assert step.executed_reward == step.best_reward
    assert a.latest_reward == a.steps[3].executed_reward
    assert [i for i, _ in a.checklist] == [1, 2, 3, 4]
    assert set(step.items) == {1, 2, 3, 4}


def test_missing_reward_stays_missing():
    state = folded(session_events("a", 3, seed=1))
    step3 = state.sessions["a"].steps[3]  # step % 7 == 3: the last candidate parsed no label
    assert step3.candidates[-1].result.reward is None
    assert step3.candidates[-1].result.feedback == "no label parsed"


def test_executed_action_differs_from_the_candidates():
    state = folded(session_events("a", 1, seed=1, outcome=None))
    state.fold_raw(
        {
            "type": "action",
            "session_id": "a",
            "step": 1,
            "action": "click('999')",
            "source": "human",
        }
    )
    step = state.sessions["a"].steps[1]
    assert step.executed == "click('999')" and step.executed_source == "human"
    assert step.executed_reward is None and step.best_reward is not None


def test_step_items_are_the_judged_candidates_likeliest_labels():
    state = folded(session_events("a", 1, seed=1, outcome=None))
    step = state.sessions["a"].steps[1]
    judged = step.judged
    assert judged is not None and judged.result.items
    assert step.items == {p.index: p.likeliest for p in judged.result.items}
    assert set(step.items.values()) <= {"yes", "in_progress", "no"}


def test_streaming_feedback_resets_on_scored():
    state = MonitorState()
    for delta in ("The agent ", "clicked"):
        state.fold_raw(
            {
                "type": "score.progress",
                "session_id": "s",
                "request": "c1",
                "candidate": 0,
                "sample": 0,
                "delta": delta,
            }
        )
    view = state.sessions["s"]
    assert view.feedback == "The agent clicked"
    state.fold_raw(
        {
            "type": "score.progress",
            "session_id": "s",
            "request": "c1",
            "candidate": 1,
            "sample": 0,
            "delta": "Wrong",
        }
    )
    assert view.feedback == "#0.0: The agent clicked\n#1.0: Wrong"
    state.fold_raw(
        {
            "type": "score.progress",
            "session_id": "s",
            "request": "c2",
            "candidate": 0,
            "sample": 0,
            "delta": "New",
        }
    )
    assert view.feedback == "New"  # a new request starts over
    events = session_events("s", 1, seed=0, progress=False, outcome=None)
    state.fold_raw(events[-2])  # scored
    assert view.feedback == "" and view.progress_request is None


def test_approval_pending_then_resolved():
    events = session_events("w", 2, seed=3, approval_at=2, resolve_approval=False, outcome=None)
    state = folded(events)
    (pending,) = state.pending()
    assert (pending.session_id, pending.step, pending.reason) == ("w", 2, "below_threshold")
    assert state.sessions["w"].state == "waiting_approval"
    v0 = state.approvals_version
    state.fold_raw(
        {
            "type": "approval.resolved",
            "request_id": pending.request_id,
            "session_id": "w",
            "decision": "reject",
            "by": "extension:x",
        }
    )
    assert state.approvals == {} and state.approvals_version > v0
    assert state.sessions["w"].state == "running"
    state.fold_raw(events[-1])  # the request replayed late (a catch-up): stays resolved
    assert state.approvals == {}


def test_repeated_action_on_the_same_url_is_a_signal():
    state = folded(session_events("r", 5, seed=2, repeat_at=4, outcome=None))
    (signal,) = state.sessions["r"].signals
    assert signal.step == 4 and signal.kind == "repeated_action"
    assert "same action as step 4" in signal.message  # index 3, read as step 4 (steps.py)
    # the same action on another page is not a repetition
    state = folded(session_events("r", 5, seed=2, outcome=None))
    assert [s for s in state.sessions["r"].signals if s.kind == "repeated_action"] == []


def test_daemon_signal_events_and_unknown_types():
    state = MonitorState()
    state.fold_raw(
        {
            "type": "signal",
            "session_id": "s",
            "step": 2,
            "kind": "loop",
            "message": "revisits the same page",
        }
    )
    state.fold_raw({"type": "something.new", "session_id": "s"})
    (signal,) = state.sessions["s"].signals
    assert (signal.step, signal.kind, signal.message) == (2, "loop", "revisits the same page")


def test_stats_and_models_fold_like_dicts():
    state = MonitorState()
    state.fold(SERVER_ADAPTER.validate_python(stats_event()))
    assert state.stats is not None and state.stats.queue_depth == 2 and state.stats_version == 1
    assert state.stats.device is not None and state.stats.device.utilization == 63.0


def test_versions_grow_only_for_what_changed():
    state = folded(session_events("a", 2, seed=1, outcome=None) + session_events("b", 2, seed=2))
    order, va, vb = state.version, state.sessions["a"].version, state.sessions["b"].version
    state.fold_raw({"type": "action", "session_id": "a", "step": 3, "action": "noop()"})
    assert state.version == order  # same sessions, same order: no table rebuild
    assert state.sessions["a"].version > va and state.sessions["b"].version == vb


def test_load_history_replaces_a_session_and_drops_stale_approvals():
    live = session_events("w", 3, seed=3, approval_at=3, resolve_approval=False, outcome=None)
    state = folded(live[:5])  # saw only the start live
    history = Session.model_validate(
        {
            "type": "session",
            "id": "m1",
            "session": {
                "session_id": "w",
                "intent": "Compare",
                "agent": {"name": "tree-agent"},
                "state": "running",
                "steps": 3,
                "created_at": 1.0,
            },
            "events": live,
        }
    )
    view = state.load_history(history)
    assert view is state.sessions["w"] and len(view.scored_steps) == 2
    assert (view.intent, view.agent, view.created_at) == ("Compare", "tree-agent", 1.0)
    assert state.approvals == {}  # the daemon says running: the request died with a restart
    waiting = history.model_copy(deep=True)
    waiting.session.state = "waiting_approval"
    state.load_history(waiting)
    assert len(state.approvals) == 1 and state.sessions["w"].state == "waiting_approval"


def test_live_typed_signal_event_is_shown():
    """A ``signal`` parsed by the SDK (a pydantic model) lands like a recorded one."""
    state = MonitorState()
    msg = SERVER_ADAPTER.validate_python(
        {
            "type": "signal",
            "session_id": "s",
            "step": 3,
            "kind": "repeated_action",
            "action": "click('12')",
            "ok": False,
            "repeats": 2,
            "detail": "click('12') again on an unchanged page",
        }
    )
    state.fold(msg)
    (signal,) = state.sessions["s"].signals
    assert (signal.step, signal.kind) == (3, "repeated_action")
    assert signal.message == "click('12') again on an unchanged page"


def test_a_held_step_counts_with_its_number_and_reward_until_decided():
    """A step waits for a person before its `scored`: the row counts it and shows its
    reward (it showed the last scored step's: "1 step, reward 0.000" for a step-4 hold)."""
    state = folded(session_events("a", 1, seed=1, outcome=None))
    v = state.sessions["a"]
    before = v.latest_reward
    state.fold_raw(
        {
            "type": "approval.request",
            "request_id": "q4",
            "session_id": "a",
            "step": 3,
            "candidate": {"thought": "", "action": "click('9')"},
            "reward": 0.125,
            "reason": "below_threshold",
            "expires_in_s": 120,
        }
    )
    assert (v.held, v.step_count, v.latest_reward) == ((3, 0.125), 2, 0.125)
    assert v.state_label == "waiting at step 4" and before != 0.125
    state.fold_raw(
        {"type": "approval.resolved", "request_id": "q4", "session_id": "a", "decision": "reject"}
    )
    assert (v.held, v.step_count, v.latest_reward) == (None, 1, before)
    assert v.state_label == "running"


def test_modes_and_paused_requests_fold():
    state = folded(session_events("a", 1, seed=1, outcome=None))
    v = state.sessions["a"]
    assert v.mode is None  # an old recording says none
    state.fold_raw({"type": "mode.set", "session_id": "a", "mode": "stop", "by": "monitor:t"})
    assert v.mode == "stop"
    request = {"method": "POST", "url": "http://shop.test/o", "kind": "write"}
    digest = "0" * 64

    def decided(status: str, decider: str, flagged: bool) -> dict:
        return {
            "type": "commit.decided",
            "session_id": "a",
            "request": request,
            "request_digest": digest,
            "decision": {"status": status, "decider": decider, "way_out": "switch to watch"},
            "flagged": flagged,
        }

    state.fold_raw(decided("approved", "person", False), at=100.0)  # a person let it go
    state.fold(decided("approved", "mode", True), at=101.5)
    state.fold_raw(decided("rejected", "mode", False))  # from history: no time known
    assert [(c.outcome, c.decision.decider, c.at) for c in v.commits] == [
        ("approved", "person", 100.0),
        ("flagged", "mode", 101.5),
        ("refused", "mode", None),
    ]
    assert v.commits[0].request.url == "http://shop.test/o"
