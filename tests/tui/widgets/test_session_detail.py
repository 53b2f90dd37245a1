"""The session detail's words for a refused step and for decided paused requests (approved,
flagged, refused, with the time received): who decided (the
daemon's ``decider``, never "person" unless a person did), why, and the way out, every string
shown through the display function (a look-alike host as punycode, controls escaped)."""

from __future__ import annotations

import copy
import time

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


def test_requests_decided_tell_approved_flagged_and_refused_apart_with_times() -> None:
    state = refused_state()
    request = {"method": "POST", "url": "http://sh\u043ep.test/o\u202e", "kind": "write"}
    at = 1_700_000_000.0
    decided = (
        ("approved", "person", "extension:me/panel", "watch", False),
        ("approved", "mode", "daemon", "watch", True),
        ("approved", "sandbox", "daemon", "ask", True),
        ("rejected", "mode", "daemon", "stop", False),
    )
    for i, (status, decider, by, mode, flagged) in enumerate(decided):
        state.fold_raw(
            {
                "type": "commit.decided",
                "session_id": "a",
                "request": request,
                "request_digest": "f" * 64,
                "decision": {
                    "status": status,
                    "decider": decider,
                    "by": by,
                    "mode": mode,
                    "way_out": "switch to watch",
                },
                "flagged": flagged,
            },
            at=at + i if i < 3 else None,  # the last one read back from history
        )
    view = state.sessions["a"]
    text = activity_text(view, view.current).plain
    assert "requests decided: 1 approved, 2 flagged, 1 refused" in text
    lines = [line for line in text.splitlines() if "POST http://xn--shp-" in line]
    stamp = [time.strftime("%H:%M:%S", time.localtime(at + i)) for i in range(3)]
    assert lines[0].startswith(f"{stamp[0]} ✓ approved POST")
    assert lines[0].endswith("(by person extension:me/panel)")
    assert lines[1].startswith(f"{stamp[1]} ⚑ flagged POST")
    assert lines[1].endswith("(ran in “run and flag”; decided by mode)")
    assert lines[2].startswith(f"{stamp[2]} ⚑ flagged POST")
    assert lines[2].endswith("(ran; decided by sandbox)")
    assert lines[3].startswith("✗ refused POST") and lines[3].endswith("(by mode)")
    assert "\u202e" not in text and "\\u202e" in text
    assert text.count("way out: switch to watch") == 1  # the refusal's only
