"""Untrusted text made safe for a terminal: every control, C1 and bidi-override character is
shown as a visible escape, and JSON output stays the same JSON."""

from __future__ import annotations

import json

from webshepherd.protocol.terminal_text import json_terminal_safe, terminal_safe

HOSTILE = "Buy \x1b]52;c;aGk=\x07 \x1b[2J\x9b2J \u202egnp.exe\u202c\x7f\r\n\tdone é ✓"


def test_controls_are_shown_not_sent():
    safe = terminal_safe(HOSTILE)
    assert safe == (
        "Buy \\x1b]52;c;aGk=\\x07 \\x1b[2J\\x9b2J \\u202egnp.exe\\u202c\\x7f\\x0d\\x0a\\x09done é ✓"
    )
    assert all(c.isprintable() for c in safe)
    kept = terminal_safe(HOSTILE, multiline=True)
    assert kept.endswith("\\x0d\n\tdone é ✓")
    assert all(c.isprintable() or c in "\n\t" for c in kept)


def test_json_stays_json_without_terminal_controls():
    text = json.dumps({"intent": HOSTILE}, ensure_ascii=False)
    safe = json_terminal_safe(text)
    assert json.loads(safe) == {"intent": HOSTILE}
    assert all(c.isprintable() or c == " " for c in safe)
    assert "é ✓" in safe  # other non-ASCII text stays readable
