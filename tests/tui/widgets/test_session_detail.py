"""The session detail's words for a refused step and for paused requests: who decided (the
daemon's ``decider``, never "person" unless a person did), why, and the way out, every string
shown through the display function (a look-alike host as punycode, controls escaped)."""

from __future__ import annotations

import copy

from webshepherd.tui.state import MonitorState
from webshepherd.tui.widgets.session_detail import activity_text, candidates_table, decision_words

from tests.tui.events import session_events

WAY_OUT = "`serve --no-guard form_submit`, or a paired person approves it"


def refused_state() -> MonitorState:
    events = session_events("a", 2, seed=3, outcome=None)
    last = next(e for e in reversed(events) if e["type"] == "scored")
    refused = copy.deepcopy(last)
    refused["decision"] = {
        "status": "rejected",
        "index": refused["best"],
        "by": "daemon",
        "note": "it submits a POST form and nobody is paired to decide",
        "decider": "guard",
        "way_out": WAY_OUT,
    }
    state = MonitorState()
    for e in [*events[: events.index(last)], refused]:
        state.fold_raw(e)
    return state


def test_a_refused_step_names_who_refused_and_the_way_out() -> None:
    view = refused_state().sessions["a"]
    step = view.current
    assert step is not None and decision_words(step) == "rejected by guard"
    text = activity_text(view, step).plain
    assert "✗ refused by guard: it submits a POST form" in text
    assert f"way out: {WAY_OUT}" in text
    assert "person" not in text.split("way out")[0]
    title = candidates_table(step)
    assert "decision: rejected by guard" in str(getattr(title, "title", ""))


def test_paused_requests_show_flagged_and_refused_through_the_display_function() -> None:
    state = refused_state()
    request = {"method": "POST", "url": "http://sh\u043ep.test/o\u202e", "kind": "write"}
    for status, decider, flagged in (("approved", "sandbox", True), ("rejected", "mode", False)):
        state.fold_raw(
            {
                "type": "commit.decided",
                "session_id": "a",
                "request": request,
                "request_digest": "f" * 64,
                "decision": {"status": status, "decider": decider, "way_out": "switch to watch"},
                "flagged": flagged,
            }
        )
    view = state.sessions["a"]
    text = activity_text(view, view.current).plain
    assert "paused requests: 1 flagged commit, 1 refused" in text
    assert "⚑ flagged POST http://xn--shp-" in text and "(ran; decided by sandbox)" in text
    assert "✗ refused POST http://xn--shp-" in text and "(by mode)" in text
    assert "\u202e" not in text and "\\u202e" in text
    assert text.count("way out: switch to watch") == 1  # the refusal's, not the flagged one's
