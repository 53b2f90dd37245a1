"""What an action string does to the page, call by call (sans-I/O): the element each call
acts on (a bid, the focused element for a key, the innermost box holding a coordinate), whether
it activates it, a ``goto``'s URL; and an AX-tree line's role and name. The guards
(:mod:`~webshepherd.daemon.sessions.guards`) and the cards read it."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from webshepherd.protocol.actions import SIGNATURES, parse_python, read_recorded

__all__ = ["Target", "action_targets", "ax_line", "coordinate_notes"]

#: Keys that activate a focused button or link (Enter also submits a text field's form).
_ACTIVATING_KEYS = frozenset({"enter", "numpadenter", "space", " "})
_CLICKS = frozenset({"click", "dblclick", "dclick"})
_QUOTED = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
_LINE = re.compile(rf"^\s*\[([^\]\s]+)\]\s+(\S+)(?:\s+(?P<name>{_QUOTED}))?")


@dataclass
class Target:
    """What one call of the action does to the page."""

    bid: str | None = None
    activates: bool = False  # a click, or a key that activates the element
    url: str | None = None  # a goto's destination
    where: str = ""  # how a coordinate action found its element ("at (x, y)")


#: BrowserGym's coordinate actions: the parameters of the point each presses at.
_MOUSE: Mapping[str, tuple[str, ...]] = {
    "mouse_click": ("x", "y", "button"),
    "mouse_dblclick": ("x", "y", "button"),
    "mouse_down": ("x", "y", "button"),
    "mouse_up": ("x", "y", "button"),
    "mouse_drag_and_drop": ("from_x", "from_y", "to_x", "to_y"),
}
_UNKNOWN = object()  # an argument that is not a literal


def action_targets(
    action: str, axtree: str, boxes: Mapping[str, Sequence[float]] | None = None
) -> list[Target]:
    """What each call in ``action`` acts on, in the order written: every call of a Python
    string (``fill('3', 'x')\\nclick('12')``, a call inside a loop or an assignment) as
    BrowserGym would run it; another syntax (WebArena's ``click [12]``) read loosely."""
    try:
        tree = parse_python(action.strip())
    except SyntaxError:
        return [_loose_target(action, axtree)]
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    ]
    if not calls:  # ``click [12]`` parses too, as a subscript
        return [_loose_target(action, axtree)]
    calls.sort(key=lambda c: (c.lineno, c.col_offset))
    out: list[Target] = []
    for call in calls:
        assert isinstance(call.func, ast.Name)
        out.extend(_call_targets(call.func.id, _bind_loosely(call), axtree, boxes))
    return out


def coordinate_notes(action: str, boxes: Mapping[str, Sequence[float]] | None) -> list[str]:
    """What the guards cannot read of ``action``'s coordinate calls: each point that no element
    box holds (no boxes sent: its target unknown), for the prediction to say so."""
    try:
        tree = parse_python(action.strip())
    except SyntaxError:
        return []
    notes = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            params = _MOUSE.get(node.func.id)
            if params is None or node.func.id == "mouse_move":
                continue
            args = _bind_loosely(node)
            for x, y in _points(node.func.id, args):
                if _at(boxes, x, y) is None:
                    why = "no element boxes were sent" if not boxes else "no element box holds it"
                    notes.append(f"{node.func.id} at ({x}, {y}): target unknown ({why})")
    return notes


def _bind_loosely(call: ast.Call) -> dict[str, object]:
    """The call's arguments by parameter name (BrowserGym's order), each a literal's value or
    :data:`_UNKNOWN`."""
    assert isinstance(call.func, ast.Name)
    name = call.func.id
    params = _MOUSE.get(name) or tuple(p.name for p in SIGNATURES.get(name, ()))
    args: dict[str, object] = {}

    def value(node: ast.expr) -> object:
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return _UNKNOWN

    for param, node in zip(params, call.args, strict=False):
        args[param] = value(node)
    for kw in call.keywords:
        if kw.arg is not None:
            args[kw.arg] = value(kw.value)
    return args


def _points(name: str, args: Mapping[str, object]) -> list[tuple[float, float]]:
    keys = [("from_x", "from_y"), ("to_x", "to_y")] if "drag" in name else [("x", "y")]
    out = []
    for kx, ky in keys:
        x, y = args.get(kx), args.get(ky)
        if isinstance(x, int | float) and isinstance(y, int | float):
            out.append((x, y))
    return out


def _at(boxes: Mapping[str, Sequence[float]] | None, x: float, y: float) -> str | None:
    """The bid of the innermost (smallest) box that holds the point (the last of equals)."""
    best: tuple[float, str] | None = None
    for bid, box in (boxes or {}).items():
        if len(box) != 4:
            continue
        left, top, width, height = box
        if left <= x <= left + width and top <= y <= top + height:
            area = width * height
            if best is None or area <= best[0]:
                best = (area, bid)
    return best[1] if best else None


def _call_targets(
    name: str,
    args: Mapping[str, object],
    axtree: str,
    boxes: Mapping[str, Sequence[float]] | None,
) -> list[Target]:
    if name == "goto":
        url = args.get("url")
        return [Target(url=url)] if isinstance(url, str) else []
    if name in _CLICKS:
        return [Target(bid=_str(args.get("bid")), activates=True)]
    if name == "press":
        return [Target(bid=_str(args.get("bid")), activates=_activating(args.get("key_comb")))]
    if name == "keyboard_press":
        return [Target(bid=_focused(axtree), activates=_activating(args.get("key")))]
    if name == "keyboard_type":
        text = args.get("text")
        return [Target(bid=_focused(axtree), activates=isinstance(text, str) and "\n" in text)]
    if name in _MOUSE and name != "mouse_move":
        return [
            Target(bid=_at(boxes, x, y), activates=True, where=f" at ({x}, {y})")
            for x, y in _points(name, args)
        ]
    return [Target(bid=_str(args.get("bid")))]


def _loose_target(action: str, axtree: str) -> Target:
    """Another syntax (WebArena's ``click [12]``), read loosely."""
    rec = read_recorded(action)
    args: dict[str, object] = {"url": rec.args[0]} if rec.op == "goto" and rec.args else {}
    if rec.element is not None:
        args["bid"] = rec.element
    if rec.op == "press" and len(rec.args) > 1:
        args["key_comb"] = rec.args[1]
    found = _call_targets(rec.op, args, axtree, None)
    return found[0] if found else Target()


def _activating(keys: object) -> bool:
    """A key combination whose last key activates: ``Enter``, ``Control+Enter``, ``Space``."""
    if not isinstance(keys, str):
        return False
    return keys == " " or keys.split("+")[-1].strip().lower() in _ACTIVATING_KEYS


def _str(v: object) -> str | None:
    return v.strip() if isinstance(v, str) and v.strip() else None


def ax_line(axtree: str, bid: str) -> tuple[str | None, str | None]:
    """``(role, name)`` of the AX tree's line for ``bid``, whole (None, None: no such line;
    name None: the line has none). The guards match words in it; the card shows it."""
    marker = f"[{bid}]"
    for line in axtree.splitlines():
        if marker not in line:
            continue
        m = _LINE.match(line)
        if m is None or m.group(1) != bid:
            continue
        quoted = m.group("name")
        if quoted is None:
            return m.group(2), None
        try:
            name = ast.literal_eval(quoted)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            name = quoted[1:-1]
        return m.group(2), name if isinstance(name, str) else str(name)
    return None, None


def _focused(axtree: str) -> str | None:
    """The bid of the AX tree's focused element (``…, focused``), if one is marked."""
    for line in axtree.splitlines():
        m = _LINE.match(line)
        if m is not None and re.search(r",\s*focused(?:,|$|\s)", line[m.end() :]):
            return m.group(1)
    return None
