"""The mode table: every mode has its sentence, and looser means fewer writes held."""

from __future__ import annotations

import pytest
from webshepherd.protocol.modes import MODE_DOES, MODES, loosens, strictness


def test_every_mode_says_what_it_does() -> None:
    assert set(MODE_DOES) == set(MODES)
    assert all(MODE_DOES[m].strip() for m in MODES)


@pytest.mark.parametrize(
    ("old", "new", "looser"),
    [
        ("ask", "watch", True),
        ("stop", "ask", True),
        ("stop", "watch", True),
        (None, "watch", True),
        ("watch", "stop", False),
        ("ask", "stop", False),
        ("watch", "ask", False),
        ("ask", "ask", False),
        (None, "ask", False),
    ],
)
def test_loosens(old, new, looser) -> None:
    assert loosens(old, new) is looser


def test_stop_is_strictest() -> None:
    assert strictness("stop") > strictness("ask") > strictness("watch")
