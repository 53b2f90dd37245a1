"""The approval card (sans-I/O): what a person needs to judge a held step, read from the step's
observation and results, never from a model's say-so.

:func:`approval_card` names the element the held action targets as the AX tree shows it
(``[bid] role 'name'`` lines), its box on the screenshot, where the action leads (a ``goto``'s
URL, a link's ``href``, the action of the form it submits: the capture's element facts), what
it types, the candidate's thought, the judge's parsed feedback (``CandidateResult.feedback``:
the explanation before the ``<answer>`` block, engine/labels.py) and the step's other candidates,
best first. Everything on it is untrusted text: the TUI and the extension escape it when shown.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from typing import Literal

from webshepherd.daemon.sessions.guards import action_targets, ax_line
from webshepherd.protocol.actions import ActionError, parse_action, read_recorded
from webshepherd.protocol.common import (
    ApprovalCard,
    Candidate,
    CandidateResult,
    CardCandidate,
    CardTarget,
    ElementFacts,
    GuardHit,
    HeldRequest,
    Screenshot,
)

__all__ = ["approval_card", "axtree_element", "commit_card"]

_MAX_ROLE, _MAX_NAME, _MAX_URL = 128, 1024, 8192
#: Actions that follow a link or submit a form when their target does.
_ACTIVATE = frozenset({"click", "dblclick"})
_ENTER = re.compile(r"(^|\+)Enter$")
_BID = re.compile(r"^[\w.-]{1,64}$")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def axtree_element(axtree: str, bid: str) -> tuple[str, str | None] | None:
    """``(role, name)`` of the element ``bid`` in a flattened AX tree, cut to the card's
    limits (name None when the line has none), or None when the tree has no such line."""
    role, name = ax_line(axtree, bid)
    if role is None:
        return None
    return _cut(role, _MAX_ROLE), None if name is None else _cut(name, _MAX_NAME)


def _destination(name: str, args: Mapping[str, object], facts: ElementFacts | None) -> str | None:
    if name == "goto":
        url = args.get("url")
        return url if isinstance(url, str) else None
    if facts is None:
        return None
    key = args.get("key_comb")
    activates = name in _ACTIVATE or (
        name == "press" and isinstance(key, str) and _ENTER.search(key) is not None
    )
    if not activates:
        return None
    if facts.submits and facts.form_action:
        return facts.form_action
    if name in _ACTIVATE and facts.href:
        return facts.href
    return None


def _typed(name: str, args: Mapping[str, object]) -> str | None:
    value = {"fill": args.get("value"), "keyboard_type": args.get("text")}.get(name)
    if name == "select_option":
        opts = args.get("options")
        value = ", ".join(str(o) for o in opts) if isinstance(opts, tuple | list) else opts
    return value if isinstance(value, str) else None


def approval_card(
    candidates: Sequence[Candidate],
    results: Sequence[CandidateResult],
    index: int,
    *,
    axtree: str,
    boxes: Mapping[str, Sequence[float]] | None = None,
    elements: Mapping[str, ElementFacts] | None = None,
    screenshot: bytes | None = None,
    screenshot_mime: str | None = None,
    predicts: Sequence[GuardHit] = (),
    headline: str | None = None,
) -> ApprovalCard:
    """The card of candidate ``index`` of a scored step (its observation: ``axtree``,
    ``boxes``, ``elements``, ``screenshot``; ``predicts``: the rules' reading of it,
    ``headline``: the sentence read first). An action that does not parse gets a card with
    its thought, feedback and the other candidates, and the target its recorded text names."""
    held = candidates[index]
    try:
        parsed = parse_action(held.action)
        name, args, bid = parsed.name, dict(parsed.args), parsed.bid
    except ActionError:
        recorded = read_recorded(held.action)
        name, args, bid = recorded.op, {}, recorded.element
        if bid is not None and not _BID.match(bid):
            bid = None  # free text, not a recorded call naming an element
        # several calls, or a coordinate one: the element the first activating call acts on
        # (mouse_click(120, 210): the innermost box holding the point), never the first number
        acts = [t for t in action_targets(held.action, axtree, boxes) if t.activates]
        if acts or recorded.op.startswith("mouse_"):
            name, bid = ("click", acts[0].bid) if acts else (recorded.op, None)
    target: CardTarget | None = None
    facts: ElementFacts | None = None
    if bid:
        bid = _cut(bid, 64)
        found = axtree_element(axtree, bid)
        box = (boxes or {}).get(bid)
        target = CardTarget(
            bid=bid,
            role=found[0] if found else None,
            name=found[1] if found else None,
            box=list(box) if box is not None else None,
        )
        facts = (elements or {}).get(bid)
    destination = _destination(name, args, facts)
    shot = None
    if target is not None and target.box is not None and screenshot:
        mime: Literal["image/png", "image/jpeg", "image/webp"] = (
            "image/jpeg"
            if screenshot_mime == "image/jpeg"
            else "image/webp"
            if screenshot_mime == "image/webp"
            else "image/png"
        )
        shot = Screenshot(mime=mime, data=base64.b64encode(screenshot).decode("ascii"))
    others = sorted(
        (r for r in results if r.index != index and r.index < len(candidates)),
        key=lambda r: (r.reward is None, -(r.reward or 0.0), r.index),
    )
    feedback = next((r.feedback for r in results if r.index == index), "")
    return ApprovalCard(
        target=target,
        destination=_cut(destination, _MAX_URL) if destination else None,
        typed=_typed(name, args),
        thought=held.thought,
        feedback=feedback,
        others=[
            CardCandidate(index=r.index, action=candidates[r.index].action, reward=r.reward)
            for r in others
        ],
        screenshot=shot,
        predicts=list(predicts),
        headline=_cut(headline, 1024) if headline else None,
    )


def commit_card(request: HeldRequest, headline: str) -> ApprovalCard:
    """The card of a request the browser paused: exactly what would be sent, and where."""
    return ApprovalCard(
        destination=_cut(request.url, _MAX_URL),
        request=request,
        headline=_cut(headline, 1024),
    )
