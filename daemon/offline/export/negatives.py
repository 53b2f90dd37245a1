"""Parsing browser actions and the rule-based negative filter of Web-Shepherd (Appendix B.3).

An action differing from the chosen one is not necessarily wrong (filling a search box
directly vs clicking it first). :func:`is_negative` keeps only clearly invalid ones.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from webshepherd.daemon.browser.actions import MAX_ACTION_CHARS, parse_python
from webshepherd.daemon.offline.evaluation.matchers import normalize

_CALL = re.compile(r"^\s*([A-Za-z_][\w]*)\s*\((.*)\)\s*;?\s*$", re.S)
_BRACKETS = re.compile(r"^\s*([A-Za-z_][\w]*)((?:\s*\[[^\]]*\])*)\s*$", re.S)
_ARG = re.compile(r"\[([^\]]*)\]")

_UNPARSEABLE = ("too deeply nested", f"longer than {MAX_ACTION_CHARS} characters")
CLICKS = frozenset({"click", "dblclick", "dclick"})
FILLS = frozenset({"fill", "type"})
OP_ONLY = frozenset({"send_msg_to_user", "scroll", "goto", "stop"})


@dataclass(frozen=True)
class ParsedAction:
    op: str
    args: tuple[str, ...]
    raw: str
    parsed: bool = True  # False: too long or too deeply nested to parse; kept as text

    @property
    def element(self) -> str | None:
        """The target element id of element actions (first argument)."""
        if self.op in OP_ONLY or not self.args:
            return None
        return self.args[0].strip()

    @property
    def text(self) -> str | None:
        """The typed text of fill/type actions."""
        return self.args[1] if self.op in FILLS and len(self.args) > 1 else None


def parse_action(action: str) -> ParsedAction:
    """BrowserGym calls (``fill('12', 'x')``) or WebArena commands (``type [12] [x] [1]``);
    anything else becomes an operation named by its first word."""
    if len(action) > MAX_ACTION_CHARS:
        return ParsedAction(action.strip()[:40].split("(", 1)[0].lower(), (), action, False)
    m = _CALL.match(action)
    if m:
        op, inner = m.group(1), m.group(2)
        try:
            tree = parse_python(f"f({inner})", mode="eval")
            assert isinstance(tree, ast.Expression) and isinstance(tree.body, ast.Call)
            node = tree.body
            args = tuple(str(ast.literal_eval(a)) for a in node.args) + tuple(
                str(ast.literal_eval(k.value)) for k in node.keywords
            )
        except SyntaxError as exc:
            if exc.msg in _UNPARSEABLE:
                return ParsedAction(op.lower(), (), action, False)
            args = _loose_args(inner)
        except (ValueError, TypeError, AssertionError, RecursionError, MemoryError):
            args = _loose_args(inner)
        return ParsedAction(op.lower(), args, action)
    m = _BRACKETS.match(action)
    if m:
        return ParsedAction(m.group(1).lower(), tuple(_ARG.findall(m.group(2))), action)
    first = action.strip().split(maxsplit=1)
    return ParsedAction(first[0].lower() if first else "", tuple(first[1:]), action)


def _loose_args(inner: str) -> tuple[str, ...]:
    return tuple(a.strip().strip("'\"") for a in inner.split(",") if a.strip())


def _op(p: ParsedAction) -> str:
    return "click" if p.op in CLICKS else ("fill" if p.op in FILLS else p.op)


def is_negative(chosen: str, candidate: str) -> bool:
    """Whether ``candidate`` is a clear negative for the ``chosen`` action (Appendix B.3).

    * send_msg_to_user, scroll, goto: a negative when the operation differs (the paper
      checks a message's content with GPT-4o; here a message is never a negative of
      another message).
    * drag_and_drop: a negative unless the candidate is drag_and_drop, scroll or hover.
    * click / dblclick: a click on another element is a negative.
    * click and fill on the same element are a reordering, not a negative; a fill on the
      same element with other (normalized) text is an unrelated input: a negative.
    * others: a negative when the operation or the arguments differ.
    * an action that could not be parsed (too long, too deeply nested) is never one.
    """
    c, x = parse_action(chosen), parse_action(candidate)
    if not (c.parsed and x.parsed) or normalize(chosen) == normalize(candidate):
        return False  # an action too big or deep to parse is never a *clear* negative
    if c.op in OP_ONLY:
        return c.op != x.op
    if c.op == "drag_and_drop":
        return x.op not in ("drag_and_drop", "scroll", "hover")
    co, xo = _op(c), _op(x)
    if co in ("click", "fill") and xo in ("click", "fill"):
        if c.element != x.element:
            return True
        if co == "fill" and xo == "fill":
            return normalize(c.text) != normalize(x.text)
        return False  # same element, click vs fill: a reordering
    if co != xo:
        return True
    return tuple(normalize(a) for a in c.args) != tuple(normalize(a) for a in x.args)
