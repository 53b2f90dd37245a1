"""Untrusted text made safe to show: the one home for it (the CLI and the TUI use
:func:`terminal_safe`, the report :func:`html_safe`; extension/src/display-text.ts is the same
rules in TypeScript, both held to protocol/vectors/display.json).

Intents, agent names, actions, thoughts, feedback, URLs and error messages come from pages,
agents and models. Shown as they are, an ESC or a C1 control starts a terminal sequence (OSC 52
writes the clipboard, CSI 2J clears the screen), a bidi override reorders what the reader sees
(``fill('7', '\\u202e91\\u202c')`` reads ``fill('7', '19')``), and an invisible character hides
inside what looks like something else (``click('1\\u200b3')`` reads ``click('13')``).
:func:`terminal_safe` shows every such character as a visible escape (``\\x1b``, ``\\u202e``,
``\\U000e0041``) and every non-ASCII host of a URL (``https://…``, or a ``goto('…')``
argument) as punycode, so a Cyrillic ``pаypal.com`` reads ``xn--pypal-4ve.com``.
"""

from __future__ import annotations

import re
from html import escape

# (first, last, class) of every code point shown as an escape; the display vectors name each
# class and test its ends. The default-ignorable ones are Unicode's Default_Ignorable_Code_Point.
ESCAPED_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0000, 0x001F, "C0 control"),
    (0x007F, 0x007F, "C0 control"),
    (0x0080, 0x009F, "C1 control"),
    (0x00AD, 0x00AD, "soft hyphen"),
    (0x034F, 0x034F, "combining grapheme joiner"),
    (0x061C, 0x061C, "bidi control"),
    (0x115F, 0x1160, "Hangul filler"),
    (0x17B4, 0x17B5, "Khmer inherent vowel"),
    (0x180B, 0x180F, "Mongolian variation selector / vowel separator"),
    (0x200B, 0x200D, "zero-width"),
    (0x200E, 0x200F, "bidi control"),
    (0x2028, 0x2029, "line / paragraph separator"),
    (0x202A, 0x202E, "bidi control"),
    (0x2060, 0x2065, "zero-width"),
    (0x2066, 0x2069, "bidi control"),
    (0x206A, 0x206F, "deprecated format"),
    (0x2800, 0x2800, "blank lookalike"),
    (0x3164, 0x3164, "Hangul filler"),
    (0xD800, 0xDFFF, "lone surrogate"),
    (0xFE00, 0xFE0F, "variation selector"),
    (0xFEFF, 0xFEFF, "zero-width"),
    (0xFFA0, 0xFFA0, "Hangul filler"),
    (0xFFF0, 0xFFF8, "default-ignorable (unassigned)"),
    (0xFFF9, 0xFFFB, "interlinear annotation"),
    (0x13430, 0x1343F, "Egyptian hieroglyph format control"),
    (0x1BCA0, 0x1BCA3, "shorthand format control"),
    (0x1D173, 0x1D17A, "musical format control"),
    (0xE0000, 0xE007F, "tag"),
    (0xE0080, 0xE00FF, "default-ignorable (unassigned)"),
    (0xE0100, 0xE01EF, "variation selector"),
    (0xE01F0, 0xE0FFF, "default-ignorable (unassigned)"),
)


def _visible(code: int) -> str:
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


_ESCAPED = "".join(
    re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
    for lo, hi, _ in ESCAPED_RANGES
)
_UNSAFE = re.compile(f"[{_ESCAPED}]")
_UNSAFE_MULTILINE = re.compile(f"(?![\n\t])[{_ESCAPED}]")

# A URL's authority (scheme://[userinfo@]host[:port]) and a goto('…') argument's host. The
# classes are spelled out (no \s, no \b) so that the TypeScript twin matches the same text.
_STOP = "\\x00-\\x20/?#'\"<>\\\\`(){}\\[\\],;|"
_URL = re.compile(f"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]*://)([^{_STOP}]*)")
_GOTO = re.compile(r"(goto\([ \t\r\n]*)(['\"])((?:(?!\2)[^\\]|\\.)*)\2", re.DOTALL)
_DOTS = re.compile("[.\u3002\uff0e\uff61]")


def _punycode_host(host: str) -> str:
    """``host`` with each non-ASCII label as ``xn--`` punycode (lower-cased first)."""
    if host.isascii():
        return host
    labels = _DOTS.split(host)
    return ".".join(
        label if label.isascii() else "xn--" + label.lower().encode("punycode").decode("ascii")
        for label in labels
    )


def _punycode_authority(authority: str) -> str:
    """``[userinfo@]host[:port]`` with the host (after the last ``@``) as punycode."""
    userinfo, at, hostport = authority.rpartition("@")
    host, colon, port = hostport.partition(":")
    return f"{userinfo}{at}{_punycode_host(host)}{colon}{port}"


def _goto_argument(match: re.Match[str]) -> str:
    head, quote, url = match.group(1), match.group(2), match.group(3)
    if "://" not in url:  # a bare host: goto('pаypal.com/login')
        cut = len(re.split(f"[{_STOP}:@]", url, maxsplit=1)[0])
        url = _punycode_host(url[:cut]) + url[cut:]
    return f"{head}{quote}{url}{quote}"


def punycode_hosts(text: str) -> str:
    """``text`` with the host of every URL in it, and of a ``goto('…')`` argument, as
    punycode where it is not ASCII; nothing else changes."""
    if text.isascii():
        return text
    text = _GOTO.sub(_goto_argument, text)
    return _URL.sub(lambda m: m.group(1) + _punycode_authority(m.group(2)), text)


def terminal_safe(text: str, *, multiline: bool = False) -> str:
    """``text`` made safe to show: every control, C1, bidi, invisible (default-ignorable),
    tag and variation-selector character written as a visible escape, and every URL's
    non-ASCII host as punycode; ``multiline`` keeps newlines and tabs (elsewhere they are
    escaped too). HTML still needs escaping after this."""
    text = punycode_hosts(text)
    pattern = _UNSAFE_MULTILINE if multiline else _UNSAFE
    return pattern.sub(lambda m: _visible(ord(m.group())), text)


def html_safe(text: object, *, multiline: bool = False) -> str:
    """``str(text)`` as :func:`terminal_safe` shows it, then HTML-escaped (quotes too): for
    an HTML page's text and attributes (the report)."""
    return escape(terminal_safe(str(text), multiline=multiline), quote=True)


_JSON_UNSAFE = re.compile(f"(?![\\x00-\\x1f])[{_ESCAPED}]")


def json_terminal_safe(json_text: str) -> str:
    """JSON text (``ensure_ascii=False``: JSON itself escapes C0 controls) with every other
    character :func:`terminal_safe` escapes as a ``\\uXXXX`` escape (a surrogate pair past the
    BMP): the same JSON, safe for a terminal."""
    return _JSON_UNSAFE.sub(lambda m: _json_escape(ord(m.group())), json_text)


def _json_escape(code: int) -> str:
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
