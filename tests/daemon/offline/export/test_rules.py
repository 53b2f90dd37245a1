"""The rule-based negative filter (Web-Shepherd Appendix B.3) and redaction."""

from __future__ import annotations

import pytest
from webshepherd.daemon.offline.export.negatives import is_negative
from webshepherd.daemon.redact import (
    MASK,
    Redactor,
    mask_password_lines,
    password_elements,
)
from webshepherd.protocol.errors import WebShepherdError


@pytest.mark.parametrize(
    ("chosen", "candidate", "negative"),
    [
        # send_msg_to_user, scroll, goto: negative iff the operation differs
        ("send_msg_to_user('$4')", "send_msg_to_user('$5')", False),
        ("send_msg_to_user('$4')", "click('3')", True),
        ("scroll(0, 200)", "scroll(0, -200)", False),
        ("goto('http://a')", "go_back()", True),
        # drag_and_drop: only drag_and_drop, scroll or hover are not negatives
        ("drag_and_drop('1', '2')", "hover('1')", False),
        ("drag_and_drop('1', '2')", "scroll(0, 100)", False),
        ("drag_and_drop('1', '2')", "click('1')", True),
        # click / dblclick: another element is a negative
        ("click('12')", "click('13')", True),
        ("click('12')", "dblclick('12')", False),
        ("click('12')", "click( '12' )", False),
        # click and fill on the same element: a reordering, not a negative
        ("click('12')", "fill('12', 'cable')", False),
        ("fill('12', 'cable')", "click('12')", False),
        ("fill('12', 'cable')", "fill('12', 'Cable ')", False),
        ("fill('12', 'cable')", "fill('12', 'socks')", True),  # unrelated input
        ("fill('12', 'cable')", "fill('14', 'cable')", True),  # other element
        ("fill('12', 'cable')", "click('14')", True),
        ("click('12')", "scroll(0, 200)", True),
        # others: the operation or the arguments differ
        ("select_option('5', 'Red')", "select_option('5', 'red')", False),
        ("select_option('5', 'Red')", "select_option('5', 'Blue')", True),
        ("press('5', 'Enter')", "click('5')", True),
        ("type [5] [cable] [1]", "click [5]", False),
    ],
)
def test_negative_filter(chosen, candidate, negative):
    assert is_negative(chosen, candidate) is negative


TREE = (
    "[1] RootWebArea 'Login'\n"
    "\t[2] textbox 'Email' value='me@x.org'\n"
    "\t[3] textbox 'Password' value='hunter2-secret'\n"
    "\t[4] button 'Sign in'"
)


def test_password_fields_are_found_and_masked():
    assert password_elements(TREE) == {"3"}
    assert password_elements("[a7] textbox 'Passcode'") == {"a7"}
    masked = mask_password_lines(TREE)
    assert "hunter2-secret" not in masked and f"value='{MASK}'" in masked
    assert "me@x.org" in masked  # only password lines


def test_redactor_learns_typed_passwords_and_applies_patterns():
    red = Redactor([r"[\w.]+@[\w.]+"])
    red.learn_passwords([("fill('3', 'hunter2-secret')", TREE), ("fill('2', 'me@x.org')", TREE)])
    assert red.secrets == {"hunter2-secret"}
    assert red.text("I typed hunter2-secret for me@x.org") == f"I typed {MASK} for {MASK}"
    # a different value typed into the password field is masked by its element alone
    assert red.action("fill('3', 'other-pw')", TREE) == f"fill('3', '{MASK}')"
    assert red.action("fill('2', 'plain')", TREE) == "fill('2', 'plain')"
    with pytest.raises(WebShepherdError, match="not a valid regular expression"):
        Redactor(["("])
