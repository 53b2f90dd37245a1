"""The refusal's one sentence, for each decider: who decided and why, in words (never
"None"); a person's refusal is final (no way out, no "ask again", no looser mode); the
daemon's kinds name their way out; a sandbox origin's decision reads as allowed."""

from __future__ import annotations

import pytest
from webshepherd.protocol.common import DecisionInfo, GuardHit
from webshepherd.protocol.refusal import PERSON_FINAL, refusal_text, refused, who_refused

WAY_OUT = "`serve --sandbox-origin http://127.0.0.1:8000` (or `serve --mode watch`)"


@pytest.mark.parametrize(
    ("decision", "sentence"),
    [
        (
            DecisionInfo(status="rejected", by="monitor:laptop", decider="person", mode="ask"),
            f"refused by person monitor:laptop (mode ask): they gave no reason — {PERSON_FINAL}",
        ),
        (
            DecisionInfo(status="rejected", by="extension:chrome", decider="person",
                         note="wrong size", way_out="an older daemon's way out", mode="ask"),
            f"refused by person extension:chrome (mode ask): wrong size — {PERSON_FINAL}",
        ),
        (
            DecisionInfo(status="rejected", by="daemon", decider="mode", mode="stop",
                         note="the session's mode is 'stop'", way_out="switch it"),
            "refused by mode (mode stop): the session's mode is 'stop' — way out: switch it",
        ),
        (
            DecisionInfo(status="rejected", by="daemon", decider="daemon", mode="ask",
                         note="no person is paired", way_out=WAY_OUT),
            f"refused by daemon (mode ask): no person is paired — way out: {WAY_OUT}",
        ),
        (
            DecisionInfo(status="timeout", by="daemon", decider="timeout", mode="ask",
                         way_out="a person decides within 120 s, in the TUI (monitor:x)"),
            "refused by timeout (mode ask): nobody decided in time — way out: a person "
            "decides within 120 s, in the TUI (monitor:x)",
        ),
        (
            DecisionInfo(status="approved", by="daemon", decider="sandbox", mode="ask",
                         note="http://shop.test is a sandbox origin: flagged, not held"),
            "allowed by sandbox (mode ask): http://shop.test is a sandbox origin: flagged, "
            "not held",
        ),
        (
            DecisionInfo(status="rejected", by="daemon", decider="guard", mode="ask",
                         guard=[GuardHit(rule="leaves_origin", detail="x")],
                         way_out="`serve --no-guard leaves_origin`"),
            "refused by guard (guard leaves_origin): a guard rule holds it — way out: "
            "`serve --no-guard leaves_origin`",
        ),
    ],
    ids=["person", "person-note", "mode", "daemon", "timeout", "sandbox", "guard"],
)  # fmt: skip
def test_each_decider_s_sentence(decision: DecisionInfo, sentence: str) -> None:
    text = refusal_text(decision)
    assert text == sentence
    assert "None" not in text and "asked again" not in text
    if decision.decider == "person":
        assert "way out" not in text and "'watch'" not in text


def test_the_action_comes_first_and_a_person_only_when_a_person_decided() -> None:
    d = DecisionInfo(status="rejected", by="alice", note="not this one", decider="person")
    assert who_refused(d) == "person alice"
    assert refusal_text(d, "click('12')") == (
        f"click('12'): refused by person alice (rejected): not this one — {PERSON_FINAL}"
    )
    older = DecisionInfo(status="timeout", by="daemon")  # a daemon older than issue 41
    assert refusal_text(older) == "refused by timeout (timeout): nobody decided in time"
    assert refused(older) and not refused(DecisionInfo(status="auto"))
