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

import ast
import base64
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from webshepherd.daemon.engine.types import ChecklistItem
from webshepherd.daemon.sessions.guards import action_targets, ax_line
from webshepherd.daemon.sessions.modes import place
from webshepherd.daemon.sessions.state import LiveSession
from webshepherd.protocol.actions import ActionError, parse_action, read_recorded
from webshepherd.protocol.commits import url_origin
from webshepherd.protocol.common import (
    ApprovalCard,
    Candidate,
    CandidateResult,
    CardCandidate,
    CardJudge,
    CardTarget,
    CommitMode,
    ElementFacts,
    FieldLabel,
    GuardHit,
    HeldRequest,
    Screenshot,
)
from webshepherd.protocol.progress import advanced

__all__ = [
    "CROP_MAX",
    "CausingStep",
    "approval_card",
    "axtree_element",
    "causing_step",
    "commit_card",
    "commit_why",
    "crop_png",
    "field_labels",
    "nearby_amounts",
]

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


def _screenshot(data: bytes, mime: str | None) -> Screenshot:
    kind: Literal["image/png", "image/jpeg", "image/webp"] = (
        "image/jpeg"
        if mime == "image/jpeg"
        else "image/webp"
        if mime == "image/webp"
        else "image/png"
    )
    return Screenshot(mime=kind, data=base64.b64encode(data).decode("ascii"))


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
        shot = _screenshot(screenshot, screenshot_mime)
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


#: The most of a paused request's crop (pixels): a bigger target is scaled down to fit.
CROP_MAX = (480, 320)
CROP_MARGIN = 16  # pixels of the page kept around the target
_AMOUNT = re.compile(
    r"(?:[$€£¥₹]\s?\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)?\s?(?:[$€£¥₹]|USD|EUR|GBP|CHF)\b)"
)
_AMOUNT_WORDS = re.compile(r"\b(?:total|subtotal|price|amount|cost)\b.*\d", re.IGNORECASE)
_TEXT_LINE = re.compile(
    r"^(?P<indent>\s*)(?:\[(?P<bid>[^\]\s]+)\]\s+)?(?P<role>\S+)\s+"
    r"(?P<name>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")(?P<rest>.*)$"
)
_VALUE = re.compile(r"\svalue=(?P<v>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")
_NEAR = 15  # AX tree lines either side of the target searched for amounts
_MAX_AMOUNTS = 4


def _literal(quoted: str) -> str:
    try:
        value = ast.literal_eval(quoted)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return quoted[1:-1]
    return value if isinstance(value, str) else str(value)


def _line_text(line: str) -> tuple[str | None, str, str] | None:
    """``(bid, role, name)`` of an AX tree line with a quoted name, else None."""
    m = _TEXT_LINE.match(line)
    if m is None:
        return None
    return m.group("bid"), m.group("role"), _literal(m.group("name")).strip()


def nearby_amounts(axtree: str, bid: str, limit: int = _MAX_AMOUNTS) -> list[str]:
    """The page's own amounts near element ``bid`` (a price, a total): texts of the AX tree
    lines within a few lines of its line that show a sum of money, or a word like 'total'
    with a number, nearest first (above before below), a bare amount with the short label
    just above it ('Total:' '$12.00'). Untrusted page text."""
    lines = axtree.splitlines()
    at = next((i for i, ln in enumerate(lines) if (t := _line_text(ln)) and t[0] == bid), None)
    if at is None:
        return []
    texts = [(t[2] if (t := _line_text(ln)) else "") for ln in lines]
    order = sorted(
        (i for i in range(max(0, at - _NEAR), min(len(lines), at + _NEAR + 1)) if i != at),
        key=lambda i: (abs(i - at), i > at),
    )
    found: list[str] = []
    for i in order:
        text = texts[i]
        if not text or not (_AMOUNT.search(text) or _AMOUNT_WORDS.search(text)):
            continue
        label = texts[i - 1] if i > 0 else ""
        if (
            _AMOUNT.fullmatch(text)
            and label
            and len(label) <= 40
            and not any(c.isdigit() for c in label)
        ):
            text = f"{label} {text}"
        text = _cut(" ".join(text.split()), 256)
        if text not in found:
            found.append(text)
        if len(found) == limit:
            break
    return found


def field_labels(axtree: str, fields: Sequence[tuple[str, str]]) -> list[FieldLabel]:
    """The page's labels of a request's fields (``(name, value)`` pairs): the name of the one
    AX tree control (a line with a bid) whose value is the field's value; a field that no
    control or several differently named ones show is left out."""
    shown: dict[str, set[str]] = {}
    for line in axtree.splitlines():
        t = _line_text(line)
        v = _VALUE.search(line)
        if t is None or t[0] is None or not t[2] or v is None:
            continue
        value = _literal(v.group("v")).strip()
        if value:
            shown.setdefault(value, set()).add(t[2])
    out: list[FieldLabel] = []
    for name, value in fields:
        names = shown.get(value.strip(), set())
        if len(names) == 1:
            out.append(FieldLabel(name=_cut(name, 256), label=_cut(next(iter(names)), 1024)))
    return out[:64]


def crop_png(data: bytes, box: Sequence[float]) -> tuple[bytes, list[float]] | None:
    """The part of a screenshot around ``box`` (left, top, width, height), with a margin of
    the page, scaled down to fit :data:`CROP_MAX`, as PNG bytes and the box within it; None
    when the bytes are no image, the box lies outside it, or Pillow is not installed (the
    card then carries the whole screenshot)."""
    try:
        from PIL import Image
    except ImportError:
        return None
    left, top, width, height = (float(v) for v in box)
    right, bottom = left + max(width, 1.0), top + max(height, 1.0)
    try:
        with Image.open(io.BytesIO(data)) as img:
            x0, y0 = max(0, int(left) - CROP_MARGIN), max(0, int(top) - CROP_MARGIN)
            x1 = min(img.width, int(right + 0.999) + CROP_MARGIN)
            y1 = min(img.height, int(bottom + 0.999) + CROP_MARGIN)
            if x1 - x0 < 2 or y1 - y0 < 2 or right <= 0 or bottom <= 0:
                return None
            part = img.crop((x0, y0, x1, y1)).convert("RGB")  # decodes the page, copies the part
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
    scale = min(CROP_MAX[0] / part.width, CROP_MAX[1] / part.height, 1.0)
    if scale < 1.0:
        size = (max(2, round(part.width * scale)), max(2, round(part.height * scale)))
        part = part.resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)
    out = io.BytesIO()
    part.save(out, format="PNG")
    inner = [(left - x0) * scale, (top - y0) * scale, width * scale, height * scale]
    return out.getvalue(), [round(v, 2) for v in inner]


@dataclass(frozen=True)
class CausingStep:
    """The step whose action caused a paused request, as the session knows it: its
    observation, the action's bid, its reward and the checklist item it serves."""

    step: int
    bid: str | None
    axtree: str
    boxes: Mapping[str, Sequence[float]] | None
    screenshot: bytes | None
    screenshot_mime: str | None
    judge: CardJudge | None


def _served(st: LiveSession, step: int, levels: Mapping[int, int] | None) -> ChecklistItem | None:
    """The checklist item an action judged with ``levels`` at ``step`` serves: the first one
    it advances past the executed actions' earlier judgements, else the first it reads as in
    progress."""
    if not levels or st.checklist is None:
        return None
    best: dict[int, int] = {}
    acted = sorted(s for s in st.acted_steps if s < step)
    if len(st.history) >= len(acted):  # the executed actions, in step order
        for s, turn in zip(acted, st.history, strict=False):
            for i, level in st.step_progress.get(s, {}).get(turn.action, {}).items():
                best[i] = max(best.get(i, 0), level)
    moved = advanced(best, levels)
    index = moved[0] if moved else next((i for i in sorted(levels) if levels[i] == 1), None)
    return next((it for it in st.checklist.items if it.index == index), None)


def causing_step(st: LiveSession, request: HeldRequest) -> CausingStep | None:
    """The step that caused ``request``: the session's latest observation when the request
    names the action that caused it (``trigger``) and was sent from that observation's origin;
    None when the page did, before any observation, or from another site. The judge's view
    only when that action was scored at that step."""
    if not request.trigger or st.axtree is None or st.step < 0:
        return None
    if request.page_url and st.url and url_origin(request.page_url) != url_origin(st.url):
        return None  # sent from another site than the page observed: not that step's
    bid = request.element
    if bid is None:
        try:
            bid = parse_action(request.trigger).bid
        except ActionError:
            bid = None
    judge = None
    scored = dict(reversed(st.step_candidates.get(st.step, [])))
    if request.trigger in scored:
        levels = st.step_progress.get(st.step, {}).get(request.trigger)
        item = _served(st, st.step, levels)
        judge = CardJudge(
            step=st.step,
            reward=scored[request.trigger],
            item=item.index if item is not None and item.index >= 1 else None,
            item_title=_cut(item.title, 1024) if item is not None else None,
        )
    return CausingStep(
        step=st.step,
        bid=bid if bid and _BID.match(bid) else None,
        axtree=st.axtree,
        boxes=st.boxes,
        screenshot=st.screenshot,
        screenshot_mime=st.screenshot_mime,
        judge=judge,
    )


_KIND_RULE = {
    "write": "sends data to keep",
    "navigation": "opens another site",
    "download": "downloads a file",
}


def commit_why(request: HeldRequest, mode: CommitMode) -> str:
    """Which rule of the session's mode holds a paused request, in one sentence."""
    what = f"{request.method.upper()} to {place(request.url)}"
    return (
        f"The session's mode is '{mode}': a request that {_KIND_RULE[request.kind]} waits "
        f"for a person before it leaves, and this one is a {what}."
    )


def commit_outcomes(request: HeldRequest) -> tuple[str, str]:
    """What Approve and Reject each do to a paused request."""
    if request.kind == "navigation":
        yes = f"The browser opens {place(request.url)} once, and the agent goes on."
    elif request.kind == "download":
        yes = f"The browser downloads {place(request.url)} once, and the agent goes on."
    else:
        yes = (
            f"The browser sends this {request.method.upper()} once, exactly as shown, "
            "and the agent goes on."
        )
    no = "Nothing is sent; the agent is told that a person refused it, final for this request."
    return yes, no


def _get_commits(request: HeldRequest) -> list[GuardHit]:
    """A paused GET (HEAD, OPTIONS) commits only because it was named (serve --commits)."""
    if request.kind != "write" or request.method.upper() not in ("GET", "HEAD", "OPTIONS"):
        return []
    detail = f"{request.method.upper()} {_cut(request.url, 512)} is named as committing"
    return [GuardHit(rule="commit_get", detail=detail + " (serve --commits); other GETs go unheld")]


def commit_card(
    request: HeldRequest,
    headline: str,
    *,
    why: str | None = None,
    step: CausingStep | None = None,
    expires_at: float | None = None,
) -> ApprovalCard:
    """The card of a request the browser paused: exactly what would be sent, and where; why
    it waits (``why``), when it is refused unanswered (``expires_at``) and what each answer
    does; and, when the step that caused it is known (``step``), the element it acted on as
    the AX tree names it with a crop of the screenshot around it, the fields as the page
    labels them, the page's amounts near it and the judge's view of that action."""
    target: CardTarget | None = None
    shot: Screenshot | None = None
    amounts: list[str] = []
    labels: list[FieldLabel] = []
    if step is not None:
        labels = field_labels(step.axtree, [(f.name, f.value) for f in request.fields])
    if step is not None and step.bid is not None:
        found = axtree_element(step.axtree, step.bid)
        box = (step.boxes or {}).get(step.bid)
        crop = crop_png(step.screenshot, box) if step.screenshot and box is not None else None
        target = CardTarget(
            bid=step.bid,
            role=found[0] if found else None,
            name=found[1] if found else None,
            box=crop[1] if crop else (list(box) if box is not None else None),
        )
        if crop is not None:
            shot = Screenshot(mime="image/png", data=base64.b64encode(crop[0]).decode("ascii"))
        elif box is not None and step.screenshot:
            shot = _screenshot(step.screenshot, step.screenshot_mime)
        amounts = nearby_amounts(step.axtree, step.bid)
    on_approve, on_reject = commit_outcomes(request)
    return ApprovalCard(
        target=target,
        destination=_cut(request.url, _MAX_URL),
        screenshot=shot,
        request=request,
        headline=_cut(headline, 1024),
        why=_cut(why, 1024) if why else None,
        labels=labels,
        amounts=amounts,
        judge=step.judge if step is not None else None,
        expires_at=expires_at,
        on_approve=on_approve,
        on_reject=on_reject,
        predicts=_get_commits(request),
    )
