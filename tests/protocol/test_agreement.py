"""Judge–person agreement: whose decisions count, and each count against hand-made decisions."""

from __future__ import annotations

import pytest
from webshepherd.protocol.agreement import Agreement, Decided, agreement, by_person


@pytest.mark.parametrize(
    ("decision", "by", "counts"),
    [
        ("approve", "monitor:tui", True),
        ("reject", "extension:webshepherd-extension/panel", True),
        ("edit", "extension:laptop", True),
        ("timeout", None, False),  # nobody decided: the default applied
        ("timeout", "daemon", False),  # closed on a restart
        ("reject", "daemon", False),  # a guard's refusal with nobody paired
        ("reject", "agent:runner", False),  # an agent never decides as a person
        ("approve", None, False),
        ("approve", "", False),
        ("approve", "monitor", False),  # no role:name shape
        (None, "monitor:tui", False),  # still open
    ],
)
def test_only_a_persons_decision_counts(decision, by, counts):
    assert by_person(decision, by) is counts


def test_counts():
    decisions = [
        Decided("approve", 0.9, True, 0.3),  # top pick, high, approved: agrees
        Decided("reject", 0.8, True, 0.3),  # top pick, high, rejected
        Decided("edit", 0.5, True, 0.3),  # top pick, high, edited away
        Decided("approve", 0.1, True, 0.3),  # top pick, low, approved
        Decided("approve", None, False, 0.3),  # no reward parsed: low; not the top pick
        Decided("reject", 0.05, None, 0.3),  # low, rejected: agrees; top pick unknown
        Decided("approve", 0.2, True, None),  # no threshold: top pick only
    ]
    got = agreement(decisions)
    assert got == Agreement(
        decisions=7,
        approved=4,
        rejected=2,
        edited=1,
        top_picks=5,
        top_approved=3,
        high=3,
        high_rejected=2,
        low=3,
        low_approved=2,
    )
    assert got.line() == (
        "judge–person agreement (7 decisions by a person): top pick approved 3/5 · "
        "high reward rejected 2/3 · low reward approved 2/3"
    )


def test_the_threshold_itself_is_high():
    got = agreement([Decided("reject", 0.3, True, 0.3), Decided("approve", 0.2999, True, 0.3)])
    assert (got.high, got.high_rejected, got.low, got.low_approved) == (1, 1, 1, 1)


def test_counts_of_nothing_are_left_out():
    """Decisions on requests the browser paused (no reward, no top pick) count as decisions,
    and the line says none was on a judged step instead of "0/0 · 0/0 · 0/0"."""
    only_commits = agreement([Decided("reject", None, False, None)] * 2)
    assert only_commits.line() == (
        "judge–person agreement (2 decisions by a person): none on a step the judge scored yet"
    )
    one_top = agreement([Decided("approve", None, True, None)])
    assert (
        one_top.line() == "judge–person agreement (1 decision by a person): top pick approved 1/1"
    )


def test_none_yet():
    assert agreement([]) == Agreement()
    assert agreement([]).line() == "judge–person agreement: no decisions by a person yet"
