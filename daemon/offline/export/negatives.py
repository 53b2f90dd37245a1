"""The rule-based negative filter of Web-Shepherd (Appendix B.3).

An action differing from the chosen one is not necessarily wrong (filling a search box
directly vs clicking it first). :func:`is_negative` keeps only clearly invalid ones.
"""

from __future__ import annotations

from webshepherd.daemon.sessions.plans import normalize
from webshepherd.protocol.actions import (
    CLICKS,
    FILLS,
    OP_ONLY,
    RecordedAction,
    read_recorded,
)


def _op(p: RecordedAction) -> str:
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
    c, x = read_recorded(chosen), read_recorded(candidate)
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
