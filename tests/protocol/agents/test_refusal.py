"""A refusal says who refused, by what rule or mode, why, and the way out; never a person
unless a person decided."""

from __future__ import annotations

from webshepherd.protocol.agents.refusal import refusal_info, refusal_text, refused, who_refused
from webshepherd.protocol.common import DecisionInfo, GuardHit

WAY_OUT = "`serve --sandbox-origin http://127.0.0.1:8000` (or `serve --mode watch`)"


def test_the_daemon_refusing_with_nobody_paired_is_named_the_daemon() -> None:
    d = DecisionInfo(
        status="rejected",
        by="daemon",
        note="POST to 127.0.0.1:8000/cart; no person is paired",
        decider="daemon",
        way_out=WAY_OUT,
        mode="ask",
    )
    text = refusal_text(d)
    assert text == (
        "refused by daemon (mode ask): POST to 127.0.0.1:8000/cart; no person is paired"
        f" — way out: {WAY_OUT}"
    )
    assert "person" not in text.split(":")[0] and refused(d)


def test_a_person_is_named_only_when_a_person_decided() -> None:
    d = DecisionInfo(status="rejected", by="alice", note="not this one", decider="person")
    assert who_refused(d) == "person alice"
    assert (
        refusal_text(d, "click('12')")
        == "click('12'): refused by person alice (rejected): not this one"
    )


def test_a_guard_names_its_rules_and_a_timeout_its_kind() -> None:
    hit = GuardHit(rule="form_submit", detail="a POST form")
    d = DecisionInfo(status="rejected", by="daemon", note="held", decider="guard", guard=[hit])
    assert refusal_text(d).startswith("refused by guard (guard form_submit): held")
    late = DecisionInfo(status="timeout", by="daemon", note=None)
    assert refusal_text(late) == "refused by timeout (timeout): no reason given"
    info = refusal_info(d, "click('3')")
    assert info["decider"] == "guard" and info["guard"] == ["form_submit"]
    assert info["action"] == "click('3')" and info["text"].startswith("click('3'): refused by")


def test_an_approved_or_automatic_decision_is_no_refusal() -> None:
    assert not refused(DecisionInfo(status="auto"))
    assert not refused(DecisionInfo(status="approved", by="alice", decider="person"))
