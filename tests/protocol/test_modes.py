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


def test_the_shared_vectors_are_this_table() -> None:
    """protocol/vectors/modes.json, which the extension's mode control is held to
    (extension/test/mode-control.test.ts): names, sentences and which way is looser."""
    import json
    from pathlib import Path

    from webshepherd.protocol.modes import MODE_NAMES, mode_name

    path = Path(__file__).resolve().parents[2] / "protocol" / "vectors" / "modes.json"
    v = json.loads(path.read_text(encoding="utf-8"))
    assert [m["mode"] for m in v["modes"]] == list(MODES)
    for m in v["modes"]:
        assert (m["name"], m["does"], m["shown"]) == (
            MODE_NAMES[m["mode"]],
            MODE_DOES[m["mode"]],
            mode_name(m["mode"]),
        )
    assert len(v["loosens"]) == 4 * len(MODES)
    for case in v["loosens"]:
        assert loosens(case["old"], case["new"]) is case["looser"], case


def test_no_name_is_stop_and_each_differs() -> None:
    from webshepherd.protocol.modes import MODE_NAMES

    assert len(set(MODE_NAMES.values())) == len(MODES)
    assert "stop" not in MODE_NAMES["stop"]  # it never stops the agent
