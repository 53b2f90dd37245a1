"""The approval policy and the book of open requests, without sockets."""

from __future__ import annotations

import pytest
from webshepherd.daemon.sessions.approvals import (
    DEFAULT_ON_TIMEOUT,
    DEFAULT_TIMEOUT_S,
    ApprovalBook,
    ApprovalPolicy,
    approval_reason,
    describe_policy,
)
from webshepherd.protocol.common import ApprovalMode
from webshepherd.protocol.errors import ProtocolError

POLICY = ApprovalPolicy(threshold=0.3, drop=0.3)


@pytest.mark.parametrize(
    ("mode", "best", "previous", "expected"),
    [
        ("auto", 0.9, None, None),
        ("auto", 0.29, None, "below_threshold"),
        ("auto", 0.3, None, None),
        ("auto", None, None, "below_threshold"),
        ("auto", 0.5, 0.85, "reward_drop"),
        ("auto", 0.6, 0.85, None),
        ("auto", 0.1, 0.9, "below_threshold"),
        ("always", 0.99, None, "always"),
        ("never", 0.0, 1.0, None),
        ("never", None, None, None),
    ],
)
def test_policy(mode, best, previous, expected):
    assert approval_reason(mode, best, previous, POLICY) == expected


def test_policy_can_be_switched_off():
    off = ApprovalPolicy(threshold=None, drop=None)
    assert approval_reason("auto", 0.0, 1.0, off) is None
    assert approval_reason("always", 1.0, None, off) == "always"


def test_first_decision_wins_and_later_ones_are_refused():
    book = ApprovalBook()
    req = book.open("sess-1", 3, 1, "click('40')")
    assert len(book) == 1
    res = book.decide(req.request_id, "edit", "click('41')", "monitor:tui", "closer")
    assert (res.status, res.action, res.by, res.approved) == (
        "edited",
        "click('41')",
        "monitor:tui",
        True,
    )
    assert len(book) == 0
    with pytest.raises(ProtocolError, match=r"already resolved.*first decision wins"):
        book.decide(req.request_id, "approve", None, "extension:ext", None)
    assert book.expire(req.request_id) is None  # the timer fires too late: nothing changes


def test_unknown_request_is_refused():
    with pytest.raises(ProtocolError, match="no open approval request"):
        ApprovalBook().decide("nope", "approve", None, "monitor:x", None)


@pytest.mark.parametrize(("default", "approved"), [("reject", False), ("approve", True)])
def test_timeout_applies_the_default(default, approved):
    book = ApprovalBook(default)
    req = book.open("s", 0, 0, "click('1')")
    res = book.expire(req.request_id)
    assert res is not None
    assert (res.decision, res.status, res.approved) == ("timeout", "timeout", approved)
    with pytest.raises(ProtocolError, match="already resolved"):
        book.decide(req.request_id, "approve", None, "monitor:late", None)


def test_reject_keeps_the_candidate_action_for_the_record():
    book = ApprovalBook()
    req = book.open("s", 0, 2, "click('9')")
    res = book.decide(req.request_id, "reject", None, "extension:ext", "wrong")
    assert (res.status, res.approved, res.note) == ("rejected", False, "wrong")


def test_a_score_that_did_not_ask_is_held_only_while_a_person_can_answer():
    assert approval_reason("auto", 0.1, None, POLICY, person_present=False) is None
    assert approval_reason("auto", None, None, POLICY, person_present=False) is None
    assert approval_reason("auto", 0.5, 0.9, POLICY, person_present=False) is None
    assert approval_reason("auto", 0.1, None, POLICY, person_present=True) == "below_threshold"
    # one that asked waits regardless (its client is told at once)
    assert approval_reason("always", 0.9, None, POLICY, person_present=False) == "always"


def test_the_default_policy_is_described_in_one_line():
    line = describe_policy(ApprovalPolicy(), DEFAULT_TIMEOUT_S, DEFAULT_ON_TIMEOUT)
    assert line == (
        "approvals: a score waits for a person when the best reward is below 0.3 (or none "
        "parsed) or it falls by 0.3 or more from the previous step, only while an extension or "
        "`webshepherd tui` is paired and connected (a score with approval='always' always waits); "
        "120 s, then 'reject'"
    )
    off = describe_policy(ApprovalPolicy(None, None), 30, "approve")
    assert "waits for a person when never by itself" in off and "30 s, then 'approve'" in off


def test_a_guard_holds_whatever_the_mode_and_the_reward() -> None:
    modes: tuple[ApprovalMode, ...] = ("auto", "always", "never")
    for mode in modes:
        for present in (True, False):
            got = approval_reason(mode, 0.99, None, POLICY, person_present=present, guarded=True)
            assert got == "guarded"


def test_a_guarded_request_is_never_approved_by_the_timeout() -> None:
    book = ApprovalBook(default_on_timeout="approve")
    plain = book.open("s1", 0, 0, "click('1')")
    guarded = book.open("s1", 1, 0, "click('2')", guarded=True)
    assert book.expire(plain.request_id).approved  # type: ignore[union-attr]
    res = book.expire(guarded.request_id)
    assert res is not None and not res.approved and res.status == "timeout"
    assert res.note is not None and "'reject'" in res.note and "guarded" in res.note


def test_a_refusal_is_closed_at_once_and_a_later_decision_is_refused() -> None:
    book = ApprovalBook()
    req, res = book.refuse("s1", 2, 1, "click('4')", "guarded (form_submit): ...")
    assert (res.decision, res.status, res.by, res.action, res.approved) == (
        "reject",
        "rejected",
        "daemon",
        None,
        False,
    )
    assert len(book) == 0
    with pytest.raises(ProtocolError, match="already resolved"):
        book.decide(req.request_id, "approve", None, "monitor:tui", None)


def test_a_restart_numbers_new_requests_after_the_recorded_ones() -> None:
    """Ids never repeat across restarts: the book continues after the highest recorded serial
    (other shapes of id are skipped); a fresh record starts at 1, as before."""
    fresh = ApprovalBook()
    fresh.continue_after([])
    assert fresh.open("s1234567890", 0, 0, "click('1')").request_id == "a1-s1234567"
    book = ApprovalBook()
    book.continue_after(["a2-s1234567", "a10-other000", "a3-s1234567", "r1", "a-x", "ax9-y"])
    opened = book.open("s1234567890", 0, 0, "click('1')")
    refused, _ = book.refuse("s1234567890", 0, 0, "click('1')", "nobody")
    assert (opened.request_id, refused.request_id) == ("a11-s1234567", "a12-s1234567")
