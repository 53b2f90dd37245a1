"""The key that writes a session's report is named as the TUI binds it (tui/keys.py's
history screen), in ``webshepherd tui --help`` and on every page that names it (``r`` is
reject)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from webshepherd.daemon.cli import build_parser
from webshepherd.tui.keys import HISTORY, MAIN

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
REPORT = next(k.shown for k in HISTORY if k.action == "report")
#: how a page names the history screen's report key: "the history screen's `w`", "`w` (in `h`)"
NAMED = re.compile(r"history screen's `([^`]+)`|`([^`]+)` \(in `h`\)")


def tui_help() -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return " ".join(sub.choices["tui"].format_help().split())


def test_the_report_key_is_not_reject() -> None:
    assert REPORT == "w" and REPORT not in {k.shown for k in MAIN}


def test_tui_help_names_the_bound_report_key() -> None:
    text = tui_help()
    assert f"where the history screen's `{REPORT}` writes reports" in text, text
    assert all(m == REPORT for pair in NAMED.findall(text) for m in pair if m), text


def test_every_page_names_the_bound_report_key() -> None:
    found = {
        page.name: [
            m
            for pair in NAMED.findall(" ".join(page.read_text("utf-8").split()))
            for m in pair
            if m
        ]
        for page in PAGES
    }
    assert found["report.md"] == [REPORT] and found["tui.md"] == [REPORT], found
    wrong = {name: keys for name, keys in found.items() if any(k != REPORT for k in keys)}
    assert not wrong, f"pages naming another key for the report: {wrong}"


def test_the_check_sees_a_wrong_key() -> None:
    assert NAMED.findall("the history screen's `r` writes it") == [("r", "")]
