"""BrowserGym action strings, the project's one action module: the vocabulary, the parser and
:class:`ActionError` (sans-I/O; parsed with ``ast``, never evaluated). It sits in the protocol
package so that the SDK, the serving core, the harness, the offline tools and the TUI may all
import it (the import contracts in pyproject.toml keep the browser stack out of the serving core).

:func:`parse_action` reads what a browser runs (the Playwright harness, the demo's text
browser): one call per string, Python call syntax, literal arguments only, positional or
keyword as BrowserGym's functions take them: ``click('12', button='right')``,
``fill('45', 'usb-c cable')``, ``select_option('7', ['a', 'b'])``, ``scroll(0, 200)``,
``keyboard_press('Enter')``, ``send_msg_to_user('done')``. Anything else raises
:class:`ActionError` with a message an agent (or a person) can act on.

:func:`read_recorded` reads what was recorded, for export: it never raises, also reads
WebArena commands (``type [12] [text] [1]``) and keeps any argument as text.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from webshepherd.protocol.errors import ErrorCode, WebShepherdError


class ActionError(WebShepherdError):
    """An action could not run; the message says which action and why."""

    code = ErrorCode.INVALID_MESSAGE


_REQUIRED: Any = object()
_BUTTONS = ("left", "middle", "right")
_MODIFIERS = ("Alt", "Control", "ControlOrMeta", "Meta", "Shift")


@dataclass(frozen=True)
class Param:
    """One parameter: its name, the literal kinds it takes, and its default."""

    name: str
    kind: str  # "str", "number", "str_or_list", "button", "modifiers"
    default: Any = _REQUIRED


def _bid(name: str = "bid") -> Param:
    return Param(name, "str")


_CLICK = (_bid(), Param("button", "button", "left"), Param("modifiers", "modifiers", ()))

#: The actions the harness runs and their parameters, in BrowserGym's order.
SIGNATURES: Mapping[str, tuple[Param, ...]] = MappingProxyType(
    {
        "noop": (Param("wait_ms", "number", 1000),),
        "click": _CLICK,
        "dblclick": _CLICK,
        "hover": (_bid(),),
        "fill": (_bid(), Param("value", "str")),
        "clear": (_bid(),),
        "focus": (_bid(),),
        "check": (_bid(),),
        "uncheck": (_bid(),),
        "press": (_bid(), Param("key_comb", "str")),
        "select_option": (_bid(), Param("options", "str_or_list")),
        "scroll": (Param("delta_x", "number"), Param("delta_y", "number")),
        "keyboard_press": (Param("key", "str"),),
        "keyboard_type": (Param("text", "str"),),
        "goto": (Param("url", "str"),),
        "go_back": (),
        "go_forward": (),
        "send_msg_to_user": (Param("text", "str"),),
        "report_infeasible": (Param("reason", "str"),),
    }
)

#: Actions that end the episode (a message to the user, or giving up).
TERMINAL = frozenset({"send_msg_to_user", "report_infeasible"})


@dataclass(frozen=True)
class ParsedAction:
    """A parsed action: its function name and every argument by name (defaults filled in)."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    text: str = ""  # the string it was parsed from

    @property
    def bid(self) -> str | None:
        """The element the action targets, if it targets one."""
        value = self.args.get("bid")
        return value if isinstance(value, str) else None

    @property
    def terminal(self) -> bool:
        return self.name in TERMINAL


MAX_ACTION_CHARS = 100_000


def parse_python(source: str, mode: str = "exec") -> ast.mod:
    """``ast.parse`` with bounds: no action is longer than :data:`MAX_ACTION_CHARS`, and
    nesting the parser cannot hold (``a.a.a…``, ``not not …``: RecursionError, MemoryError)
    is a :class:`SyntaxError` like any other unparseable text."""
    if len(source) > MAX_ACTION_CHARS:
        raise SyntaxError(f"longer than {MAX_ACTION_CHARS} characters")
    try:
        return ast.parse(source, mode=mode)
    except (RecursionError, MemoryError):
        raise SyntaxError("too deeply nested") from None


def parse_action(text: str) -> ParsedAction:
    """Parse one BrowserGym action string; raises :class:`ActionError` when it cannot run."""
    if not isinstance(text, str) or not text.strip():
        raise ActionError("empty action: expected a call such as click('12')")
    source = text.strip()
    try:
        tree = parse_python(source)
        assert isinstance(tree, ast.Module)
    except SyntaxError as exc:
        raise ActionError(f"not a function call: {source!r} ({exc.msg})") from None
    if len(tree.body) != 1:
        raise ActionError(
            f"one action per step, got {len(tree.body)} statements in {source!r}"
            if tree.body
            else f"empty action: {source!r}"
        )
    stmt = tree.body[0]
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        raise ActionError(f"not a function call: {source!r}")
    call = stmt.value
    if not isinstance(call.func, ast.Name):
        raise ActionError(f"call a plain action name, not {_source(call.func)!r}")
    name = call.func.id
    params = SIGNATURES.get(name)
    if params is None:
        raise ActionError(f"unknown action {name!r}; known: {', '.join(sorted(SIGNATURES))}")
    return ParsedAction(name, MappingProxyType(_bind(name, params, call)), source)


def _bind(name: str, params: tuple[Param, ...], call: ast.Call) -> dict[str, Any]:
    if len(call.args) > len(params):
        raise ActionError(
            f"{_usage(name, params)} takes at most {len(params)} arguments, got {len(call.args)}"
        )
    bound: dict[str, Any] = {}
    for param, node in zip(params, call.args, strict=False):
        if isinstance(node, ast.Starred):
            raise ActionError(f"{name}: *args are not allowed")
        bound[param.name] = _literal(name, param, node)
    by_name = {p.name: p for p in params}
    for kw in call.keywords:
        if kw.arg is None:
            raise ActionError(f"{name}: **kwargs are not allowed")
        named = by_name.get(kw.arg)
        if named is None:
            raise ActionError(f"{name}() has no argument {kw.arg!r}: {_usage(name, params)}")
        if kw.arg in bound:
            raise ActionError(f"{name}() got argument {kw.arg!r} twice")
        bound[kw.arg] = _literal(name, named, kw.value)
    for param in params:
        if param.name not in bound:
            if param.default is _REQUIRED:
                raise ActionError(f"{name}() is missing {param.name!r}: {_usage(name, params)}")
            bound[param.name] = param.default
    return {p.name: bound[p.name] for p in params}


def _usage(name: str, params: tuple[Param, ...]) -> str:
    return (
        f"{name}({', '.join(p.name if p.default is _REQUIRED else f'{p.name}=…' for p in params)})"
    )


def _literal(name: str, param: Param, node: ast.expr) -> Any:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ActionError(
            f"{name}: argument {param.name!r} must be a literal, not {_source(node)!r}"
        ) from None
    return _check(name, param, value)


def _source(node: ast.AST, limit: int = 200) -> str:
    """The node's source for an error text (cut short; never fails on deep nodes)."""
    try:
        text = ast.unparse(node)
    except (RecursionError, MemoryError):
        return "<expression too deeply nested>"
    return text if len(text) <= limit else text[:limit] + "…"


def _check(name: str, param: Param, value: Any) -> Any:
    where = f"{name}: {param.name!r}"
    if param.kind == "str":
        if not isinstance(value, str):
            hint = f" (write '{value}')" if isinstance(value, int) and param.name == "bid" else ""
            raise ActionError(f"{where} must be a string, got {value!r}{hint}")
        if param.name == "bid" and not value:
            raise ActionError(f"{where} is empty")
        return value
    if param.kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ActionError(f"{where} must be a number, got {value!r}")
        return value
    if param.kind == "str_or_list":
        if isinstance(value, str):
            return value
        if isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise ActionError(f"{where} must be a string or a non-empty list of strings, got {value!r}")
    if param.kind == "button":
        if value not in _BUTTONS:
            raise ActionError(f"{where} must be one of {', '.join(_BUTTONS)}, got {value!r}")
        return value
    if param.kind == "modifiers":
        if not isinstance(value, list | tuple) or not all(v in _MODIFIERS for v in value):
            raise ActionError(f"{where} must be a list of {', '.join(_MODIFIERS)}, got {value!r}")
        return tuple(value)
    raise AssertionError(param.kind)


# -- recorded actions (export): lenient, never raises ---------------------------------------

_CALL = re.compile(r"^\s*([A-Za-z_][\w]*)\s*\((.*)\)\s*;?\s*$", re.S)
_BRACKETS = re.compile(r"^\s*([A-Za-z_][\w]*)((?:\s*\[[^\]]*\])*)\s*$", re.S)
_BRACKET_ARG = re.compile(r"\[([^\]]*)\]")
_UNPARSEABLE = ("too deeply nested", f"longer than {MAX_ACTION_CHARS} characters")

#: Operation names (lower case) of recorded clicks and fills, BrowserGym's and WebArena's.
CLICKS = frozenset({"click", "dblclick", "dclick"})
FILLS = frozenset({"fill", "type"})
#: Operations that target no element.
OP_ONLY = frozenset({"send_msg_to_user", "scroll", "goto", "stop"})


@dataclass(frozen=True)
class RecordedAction:
    """A recorded action as text: its operation (lower case) and its arguments as strings."""

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


def read_recorded(action: str) -> RecordedAction:
    """BrowserGym calls (``fill('12', 'x')``) or WebArena commands (``type [12] [x] [1]``);
    anything else becomes an operation named by its first word."""
    if len(action) > MAX_ACTION_CHARS:
        return RecordedAction(action.strip()[:40].split("(", 1)[0].lower(), (), action, False)
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
                return RecordedAction(op.lower(), (), action, False)
            args = _loose_args(inner)
        except (ValueError, TypeError, AssertionError, RecursionError, MemoryError):
            args = _loose_args(inner)
        return RecordedAction(op.lower(), args, action)
    m = _BRACKETS.match(action)
    if m:
        return RecordedAction(m.group(1).lower(), tuple(_BRACKET_ARG.findall(m.group(2))), action)
    first = action.strip().split(maxsplit=1)
    return RecordedAction(first[0].lower() if first else "", tuple(first[1:]), action)


def _loose_args(inner: str) -> tuple[str, ...]:
    return tuple(a.strip().strip("'\"") for a in inner.split(",") if a.strip())


#: browser-use scrolls by pages; a page is this many pixels in BrowserGym's scroll.
BROWSER_USE_SCROLL_PX = 600


def from_browser_use(name: str, params: dict[str, Any], bids: dict[int, str]) -> str | None:
    """browser-use's action (its name, parameters and the index → bid map) as a BrowserGym
    action string; None when it has no counterpart. No framework imported: ``rescore`` reads
    saved browser-use histories with it, the live hooks in ``integrations/browser_use.py``."""

    def bid() -> str | None:
        index = params.get("index")
        return bids.get(index) if isinstance(index, int) else None

    if name == "click" and bid():
        return f"click({bid()!r})"
    if name == "input" and bid():
        return f"fill({bid()!r}, {params.get('text', '')!r})"
    if name == "navigate":
        goto = f"goto({params['url']!r})"
        return f"new_tab()\n{goto}" if params.get("new_tab") else goto
    if name == "go_back":
        return "go_back()"
    if name == "scroll" and params.get("index") is None:
        sign = 1 if params.get("down", True) else -1
        return f"scroll(0, {sign * round(float(params.get('pages', 1.0)) * BROWSER_USE_SCROLL_PX)})"
    if name == "select_dropdown" and bid():
        return f"select_option({bid()!r}, {params.get('text', '')!r})"
    if name == "send_keys":
        return f"keyboard_press({params.get('keys', '')!r})"
    if name == "done":
        return f"send_msg_to_user({params.get('text', '')!r})"
    return None
