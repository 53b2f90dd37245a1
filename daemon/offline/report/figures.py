"""Inline SVG figures of a report: the reward curve, the checklist heat-strip, and the
outlines of candidates' targets on a screenshot (pure functions returning SVG text)."""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from webshepherd.protocol.terminal_text import html_safe

LABEL_COLOURS = {"yes": "#2e9e5b", "in_progress": "#e0a526", "no": "#d0483f", None: "#d9dce1"}
LABEL_NAMES = {"yes": "Yes", "in_progress": "In Progress", "no": "No", None: "not scored"}
DECISION_COLOURS = {
    "approve": "#2e9e5b",
    "edit": "#3b6fd4",
    "reject": "#d0483f",
    "timeout": "#8a8f98",
    None: "#8a8f98",
}
CANDIDATE_COLOURS = ("#3b6fd4", "#d0483f", "#2e9e5b", "#9b59b6", "#e0a526", "#16a2b8")


@dataclass
class CurvePoint:
    step: int  # the number a person reads (protocol/steps.py: the wire index + 1)
    best: float | None
    executed: float | None
    approval: str | None  # the decision of the step's approval request ("pending" if none)


def _fmt(v: float) -> str:
    return f"{v:.1f}"


def reward_curve(points: Sequence[CurvePoint], width: int = 880, height: int = 260) -> str:
    """Best candidate's and executed action's reward per step, approvals as diamonds."""
    left, right, top, bottom = 48, 16, 16, 40
    w, h = width - left - right, height - top - bottom
    steps = [p.step for p in points]
    lo, hi = (min(steps), max(steps)) if steps else (0, 1)
    span = max(hi - lo, 1)

    def x(step: int) -> float:
        return left + (step - lo) / span * w if len(steps) > 1 else left + w / 2

    def y(r: float) -> float:
        return top + (1 - r) * h

    out = [
        f'<svg class="curve" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="reward per step">'
    ]
    for r in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(
            f'<line x1="{left}" x2="{left + w}" y1="{_fmt(y(r))}" y2="{_fmt(y(r))}" '
            'stroke="#e3e6ea"/>'
            f'<text x="{left - 6}" y="{_fmt(y(r) + 4)}" text-anchor="end" '
            f'class="tick">{r:.2f}</text>'
        )
    every = max(1, len(steps) // 12)
    for i, s in enumerate(steps):
        if i % every == 0 or i == len(steps) - 1:
            out.append(
                f'<text x="{_fmt(x(s))}" y="{top + h + 16}" text-anchor="middle" '
                f'class="tick">{s}</text>'
            )
    out.append(
        f'<text x="{left + w / 2}" y="{height - 4}" text-anchor="middle" class="tick">step</text>'
    )
    for key, colour, dash in (("best", "#3b6fd4", ""), ("executed", "#2e9e5b", "5 3")):
        pts = [(p.step, getattr(p, key)) for p in points if getattr(p, key) is not None]
        runs: list[list[tuple[int, float]]] = [[]]  # a step without a reward breaks the line
        for p in points:
            value = getattr(p, key)
            if value is None:
                runs.append([])
            else:
                runs[-1].append((p.step, value))
        for run in runs:
            if len(run) > 1:
                coords = " ".join(f"{_fmt(x(s))},{_fmt(y(r))}" for s, r in run)
                out.append(
                    f'<polyline class="line-{key}" points="{coords}" fill="none" '
                    f'stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/>'
                )
        for s, r in pts:
            out.append(
                f'<circle class="pt-{key}" cx="{_fmt(x(s))}" cy="{_fmt(y(r))}" r="3.5" '
                f'fill="{colour}"><title>step {s}: {key} {r:.3f}</title></circle>'
            )
    for p in points:
        if p.approval is None:
            continue
        cx, cy = x(p.step), top + h - 2
        colour = DECISION_COLOURS.get(p.approval, "#8a8f98")
        out.append(
            f'<path class="approval" d="M{_fmt(cx)} {_fmt(cy - 14)} l6 6 l-6 6 l-6 -6 z" '
            f'fill="{colour}"><title>step {p.step}: approval {html_safe(p.approval)}</title></path>'
        )
    lx = left + 8
    for label, colour, dash in (
        ("best candidate", "#3b6fd4", ""),
        ("executed action", "#2e9e5b", "5 3"),
    ):
        out.append(
            f'<line x1="{lx}" x2="{lx + 22}" y1="{top + 6}" y2="{top + 6}" stroke="{colour}" '
            f'stroke-width="2" stroke-dasharray="{dash}"/>'
            f'<text x="{lx + 28}" y="{top + 10}" class="legend">{label}</text>'
        )
        lx += 150
    out.append(
        f'<path d="M{lx + 6} {top} l6 6 l-6 6 l-6 -6 z" fill="#8a8f98"/>'
        f'<text x="{lx + 18}" y="{top + 10}" class="legend">approval</text></svg>'
    )
    return "".join(out)


def heat_strip(
    titles: Sequence[str], steps: Sequence[int], labels: Sequence[Sequence[str | None]]
) -> str:
    """Checklist items (rows) by steps (columns), each cell coloured by the item's likeliest
    label at that step. ``labels[i][j]``: item i at steps[j]; titles are redacted text."""
    cell, gap, title_w = 18, 2, 0
    cols = max(len(steps), 1)
    width = cols * (cell + gap) + 40
    height = len(titles) * (cell + gap) + 24
    out = [
        f'<svg class="heat" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="checklist progress">'
    ]
    every = max(1, cols // 20)
    for j, s in enumerate(steps):
        if j % every == 0:
            out.append(
                f'<text x="{title_w + j * (cell + gap) + cell / 2}" y="12" '
                f'text-anchor="middle" class="tick">{s}</text>'
            )
    for i, title in enumerate(titles):
        yy = 18 + i * (cell + gap)
        for j, s in enumerate(steps):
            lab = labels[i][j] if j < len(labels[i]) else None
            out.append(
                f'<rect class="cell cell-{lab or "none"}" x="{title_w + j * (cell + gap)}" '
                f'y="{yy}" width="{cell}" height="{cell}" rx="3" fill="{LABEL_COLOURS[lab]}">'
                f"<title>{html_safe(title)} · step {s}: {LABEL_NAMES[lab]}</title></rect>"
            )
    out.append("</svg>")
    return "".join(out)


_BOX = re.compile(r'box="\((-?[\d.]+),\s*(-?[\d.]+),\s*(-?[\d.]+),\s*(-?[\d.]+)\)"')
_CENTER = re.compile(r'center="\((-?[\d.]+),\s*(-?[\d.]+)\)"')
_LINE_BID = re.compile(r"^\s*\[([^\]\s]+)\]")


def element_boxes(axtree: str) -> dict[str, tuple[float, float, float, float]]:
    """``bid → (left, top, right, bottom)`` from an AX tree flattened with coordinates
    (BrowserGym's ``box="(l,t,r,b)"``, or ``center="(x,y)"`` as a 24-pixel square)."""
    boxes: dict[str, tuple[float, float, float, float]] = {}
    for line in axtree.splitlines():
        m = _LINE_BID.match(line)
        if not m:
            continue
        b = _BOX.search(line)
        if b:
            left, top, right, bottom = (float(v) for v in b.groups())
            boxes[m.group(1)] = (left, top, right, bottom)
            continue
        c = _CENTER.search(line)
        if c:
            cx, cy = float(c.group(1)), float(c.group(2))
            boxes[m.group(1)] = (cx - 12, cy - 12, cx + 12, cy + 12)
    return boxes


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height of a PNG, JPEG or WebP image from its header (None if unknown)."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        w, h = struct.unpack(">II", data[16:24])
        return int(w), int(h)
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                return None
            marker, length = data[i + 1], struct.unpack(">H", data[i + 2 : i + 4])[0]
            if marker in (0xC0, 0xC1, 0xC2):
                h, w = struct.unpack(">HH", data[i + 5 : i + 9])
                return int(w), int(h)
            i += 2 + length
        return None
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and data[12:16] == b"VP8X":
        w = 1 + int.from_bytes(data[24:27], "little")
        h = 1 + int.from_bytes(data[27:30], "little")
        return w, h
    return None


@dataclass
class Outline:
    label: str  # e.g. "#0 click('12')"
    box: tuple[float, float, float, float]
    colour: str
    chosen: bool


def outlines_svg(size: tuple[int, int], outlines: Sequence[Outline]) -> str:
    """An SVG laid over the screenshot (same coordinate space) with one rectangle per target."""
    w, h = size
    out = [
        f'<svg class="targets" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" '
        'preserveAspectRatio="none">'
    ]
    for o in outlines:
        left, top, right, bottom = o.box
        out.append(
            f'<rect class="target" x="{_fmt(left)}" y="{_fmt(top)}" '
            f'width="{_fmt(max(right - left, 1))}" height="{_fmt(max(bottom - top, 1))}" '
            f'fill="none" stroke="{o.colour}" stroke-width="{4 if o.chosen else 2}" '
            f'vector-effect="non-scaling-stroke"><title>{html_safe(o.label)}</title></rect>'
            f'<text x="{_fmt(left + 2)}" y="{_fmt(max(top - 4, 12))}" fill="{o.colour}" '
            f'class="target-label">{html_safe(o.label.split(" ", 1)[0])}</text>'
        )
    out.append("</svg>")
    return "".join(out)
