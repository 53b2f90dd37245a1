"""Untrusted text made safe to show: every control, C1, bidi, invisible, tag and
variation-selector character is a visible escape, a URL's non-ASCII host is punycode (the shared
vectors in protocol/vectors/display.json, which the extension's tests read too), and JSON
output stays the same JSON."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from webshepherd.protocol.terminal_text import (
    ESCAPED_RANGES,
    html_safe,
    json_terminal_safe,
    punycode_hosts,
    terminal_safe,
)

VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "protocol/vectors/display.json").read_text("utf-8")
)
CASES: list[dict[str, Any]] = VECTORS["cases"]
HOSTILE = "Buy \x1b]52;c;aGk=\x07 \x1b[2J\x9b2J \u202egnp.exe\u202c\x7f\r\n\tdone é ✓"
# Format characters that draw a visible sign (the number signs that sit over digits).
VISIBLE_FORMAT = {*range(0x600, 0x606), 0x6DD, 0x70F, 0x890, 0x891, 0x8E2, 0x110BD, 0x110CD}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['class']}:{c['input'][:24]!a}")
def test_display_vector(case: dict[str, Any]) -> None:
    shown = terminal_safe(case["input"], multiline=case.get("multiline", False))
    assert shown == case["display"]


def test_the_vectors_cover_every_class_and_range() -> None:
    ranges = [
        (int(r["first"][2:], 16), int(r["last"][2:], 16), r["class"]) for r in VECTORS["escaped"]
    ]
    assert ranges == list(ESCAPED_RANGES)
    classes = {c["class"] for c in CASES}
    assert {cls for _, _, cls in ESCAPED_RANGES} <= classes
    assert {"url host", "plain text", "multiline"} <= classes
    tested = {ord(ch) for c in CASES for ch in c["input"]}
    for lo, hi, cls in ESCAPED_RANGES:
        assert lo in tested and hi in tested, f"{cls} U+{lo:04X}..U+{hi:04X}: ends untested"


def test_exactly_the_ranges_are_escaped() -> None:
    inside = {c for lo, hi, _ in ESCAPED_RANGES for c in range(lo, hi + 1)}
    for code in range(0x110000):
        shown = terminal_safe(chr(code))
        assert (shown != chr(code)) == (code in inside), f"U+{code:04X}"
        if code in inside:
            assert shown.isascii() and shown.isprintable(), f"U+{code:04X}"


def test_every_control_format_and_separator_character_is_escaped() -> None:
    """Unicode's own categories agree: every Cc, Cf, Cs, Zl and Zp character is escaped
    except the format characters that draw a sign."""
    for code in range(0x110000):
        if unicodedata.category(chr(code)) in {"Cc", "Cf", "Cs", "Zl", "Zp"}:
            assert (terminal_safe(chr(code)) == chr(code)) == (code in VISIBLE_FORMAT), hex(code)


def test_controls_are_shown_not_sent() -> None:
    safe = terminal_safe(HOSTILE)
    assert safe == (
        "Buy \\x1b]52;c;aGk=\\x07 \\x1b[2J\\x9b2J \\u202egnp.exe\\u202c\\x7f\\x0d\\x0a\\x09done é ✓"
    )
    assert all(c.isprintable() for c in safe)
    kept = terminal_safe(HOSTILE, multiline=True)
    assert kept.endswith("\\x0d\n\tdone é ✓")
    assert all(c.isprintable() or c in "\n\t" for c in kept)


def test_hosts_agree_with_the_idna_codec() -> None:
    """Python's IDNA 2003 codec, where it accepts the host, writes the same ASCII form."""
    for host in ("pаypal.com", "bücher.de", "пример.рф", "日本語.jp", "ελληνικά.gr"):
        assert punycode_hosts(f"https://{host}/") == f"https://{host.encode('idna').decode()}/"


def test_json_stays_json_without_terminal_controls() -> None:
    hostile = HOSTILE + "\u200b\U000e0041\ufe0f\ud800"
    text = json.dumps({"intent": hostile}, ensure_ascii=False)
    safe = json_terminal_safe(text)
    assert json.loads(safe) == {"intent": hostile}
    assert all(c.isprintable() or c == " " for c in safe)
    assert "é ✓" in safe  # other non-ASCII text stays readable


def test_showing_twice_changes_nothing_more() -> None:
    for case in CASES:
        once = terminal_safe(case["input"], multiline=case.get("multiline", False))
        assert terminal_safe(once, multiline=case.get("multiline", False)) == once


def test_html_is_escaped_after_the_text_is_made_visible() -> None:
    shown = html_safe("<b onclick='x'>\u202egoto('https://pаypal.com/')</b> & \U000e0041")
    assert shown == (
        "&lt;b onclick=&#x27;x&#x27;&gt;\\u202egoto(&#x27;https://xn--pypal-4ve.com/&#x27;)"
        "&lt;/b&gt; &amp; \\U000e0041"
    )
    assert html_safe("a\nb", multiline=True) == "a\nb"
    assert html_safe("a\nb") == "a\\x0ab"
