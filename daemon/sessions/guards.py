"""Guards on actions that commit, whatever their reward (sans-I/O; issue 35).

A guarded action waits for a person even when the judge is sure of it: the reward says how
much an action helps the task, not whether a person would let it run. The rules read only
what the page says of the target (the capture's :class:`ElementFacts`, the AX tree's line of
its bid) and the action string; never a model's text.

- ``form_submit``: a click, or Enter/Space, on an element that submits a form whose method is
  not GET (nor DIALOG, which submits nothing);
- ``name_match``: a click, or Enter/Space, on an element whose accessible name holds one of
  :attr:`GuardPolicy.words` as a whole word, whatever its case, invisible characters and
  look-alike letters (:func:`name_key`);
- ``leaves_origin``: a ``goto`` to, a link to, or a form submitted to another origin than the
  session's (its ``start_url``'s, else its first observation's), URLs read as a browser reads
  them (the WHATWG URL standard, by ``ada_url``: ``http://a.test\\@b.test/`` is on a.test);
- ``download``: a link with ``download``, or a ``goto``/link to a file whose name ends with one
  of :attr:`GuardPolicy.extensions`;
- ``commit_get``: a GET predicted to commit: a ``goto``, link or GET form whose URL the operator
  named (``serve --commits``, :func:`~webshepherd.protocol.commits.matching_commit`), or a link
  or GET form whose accessible name says it deletes or confirms (:attr:`GuardPolicy.get_words`,
  matched as ``name_match`` matches). Other GETs are not predicted, and not held.

``keyboard_press('Enter')`` and ``keyboard_type`` with a newline act on the focused element
(the AX tree's ``focused`` line). An element the capture sent no facts for is judged by its
AX-tree name only. A string of several calls is judged call by call (BrowserGym runs them
all); a coordinate action (``mouse_click(x, y)``) acts on the innermost element whose box
holds the point (:func:`coordinate_notes` names the points no box holds). In a session whose
browser holds commits the rules predict (the card shows them) and never hold.
"""

from __future__ import annotations

import ast
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from typing import get_args

import ada_url
from webshepherd.protocol.actions import SIGNATURES, parse_python, read_recorded
from webshepherd.protocol.commits import matching_commit
from webshepherd.protocol.common import ElementFacts, GuardHit, GuardRule
from webshepherd.protocol.terminal_text import ESCAPED_RANGES

__all__ = [
    "ALL_RULES",
    "DEFAULT_EXTENSIONS",
    "DEFAULT_GET_WORDS",
    "DEFAULT_WORDS",
    "GuardPolicy",
    "Target",
    "action_targets",
    "ax_line",
    "coordinate_notes",
    "describe_guards",
    "guard_hits",
    "join_url",
    "name_key",
    "origin_of",
    "session_origin",
]

ALL_RULES: tuple[GuardRule, ...] = get_args(GuardRule)

#: Words (or phrases) that name an action that commits: paying, ordering, deleting, sending,
#: publishing, signing up, cancelling. Matched as whole words, case-insensitive, in the target's
#: accessible name. Left out on purpose: "checkout" (reaching a checkout page commits nothing;
#: its "Place order" / "Pay" button does), "sign" alone (it would hold every "Sign in"), "save"
#: and "add" (every form has one; a POST form is held by ``form_submit`` anyway).
DEFAULT_WORDS: tuple[str, ...] = (
    "buy",
    "pay",
    "purchase",
    "order",
    "delete",
    "remove",
    "erase",
    "send",
    "submit",
    "confirm",
    "transfer",
    "withdraw",
    "donate",
    "publish",
    "post",
    "sign up",
    "subscribe",
    "unsubscribe",
    "cancel",
    "book now",
    "reserve",
)

#: Words (or phrases) that name a link or GET form whose request changes something: deleting,
#: confirming, unsubscribing, cancelling an order. "cancel" alone is left out (most "Cancel"
#: links go back and change nothing).
DEFAULT_GET_WORDS: tuple[str, ...] = (
    "delete",
    "remove",
    "erase",
    "discard",
    "confirm",
    "unsubscribe",
    "opt out",
    "deactivate",
    "revoke",
    "cancel order",
    "cancel subscription",
    "cancel booking",
    "cancel reservation",
    "cancel membership",
    "empty cart",
)

#: A link or ``goto`` to a file with one of these extensions downloads it.
DEFAULT_EXTENSIONS: tuple[str, ...] = (
    "zip", "7z", "rar", "tar", "gz", "tgz", "bz2", "xz", "exe", "msi", "dmg", "pkg", "deb",
    "rpm", "apk", "appimage", "iso", "img", "bin", "jar", "sh", "bat", "ps1", "pdf", "doc",
    "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "csv", "torrent",
)  # fmt: skip

#: Keys that activate a focused button or link (Enter also submits a text field's form).
_ACTIVATING_KEYS = frozenset({"enter", "numpadenter", "space", " "})
_CLICKS = frozenset({"click", "dblclick", "dclick"})
_QUOTED = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
_LINE = re.compile(rf"^\s*\[([^\]\s]+)\]\s+(\S+)(?:\s+(?P<name>{_QUOTED}))?")


@dataclass(frozen=True)
class GuardPolicy:
    """Which rules hold a step for a person, the words of ``name_match``, the file extensions
    of ``download`` and the words of ``commit_get``. The default holds all but ``name_match``;
    ``GuardPolicy(rules=frozenset())`` holds nothing."""

    rules: frozenset[GuardRule] = frozenset(ALL_RULES) - {"name_match"}  # names: opt-in
    words: tuple[str, ...] = DEFAULT_WORDS
    extensions: tuple[str, ...] = DEFAULT_EXTENSIONS
    get_words: tuple[str, ...] = DEFAULT_GET_WORDS

    def __post_init__(self) -> None:
        unknown = set(self.rules) - set(ALL_RULES)
        if unknown:
            raise ValueError(f"unknown guard rule {sorted(unknown)[0]!r}; known: {ALL_RULES}")

    @property
    def enabled(self) -> bool:
        return bool(self.rules)

    def without(self, *rules: str) -> GuardPolicy:
        """This policy less ``rules`` (each one of :data:`ALL_RULES`)."""
        for r in rules:
            if r not in ALL_RULES:
                raise ValueError(f"unknown guard rule {r!r}; known: {', '.join(ALL_RULES)}")
        return GuardPolicy(self.rules - set(rules), self.words, self.extensions, self.get_words)

    @cached_property
    def _words(self) -> list[tuple[str, re.Pattern[str]]]:
        return [(w, _word_pattern(w)) for w in self.words if w.strip()]

    @cached_property
    def _get_words(self) -> list[tuple[str, re.Pattern[str]]]:
        return [(w, _word_pattern(w)) for w in self.get_words if w.strip()]

    def matching_word(self, name: str) -> str | None:
        """The first configured word in ``name`` as a whole word, whatever its case, its
        invisible characters and its look-alike letters (:func:`name_key`), or None."""
        key = name_key(name)
        return next((w for w, pattern in self._words if pattern.search(key)), None)

    def matching_get_word(self, name: str) -> str | None:
        """The first of :attr:`get_words` in ``name``, matched as :meth:`matching_word`."""
        key = name_key(name)
        return next((w for w, pattern in self._get_words if pattern.search(key)), None)

    def is_download(self, url: str) -> bool:
        try:
            path = ada_url.URL(url).pathname.rsplit("/", 1)[-1].lower()
        except ValueError:
            return False
        return "." in path and path.rsplit(".", 1)[1] in {e.lower() for e in self.extensions}


@dataclass
class Target:
    """What one call of the action does to the page."""

    bid: str | None = None
    activates: bool = False  # a click, or a key that activates the element
    url: str | None = None  # a goto's destination
    where: str = ""  # how a coordinate action found its element ("at (x, y)")


def guard_hits(
    policy: GuardPolicy,
    action: str,
    *,
    url: str,
    axtree: str,
    elements: Mapping[str, ElementFacts] | None,
    origin: str | None,
    boxes: Mapping[str, Sequence[float]] | None = None,
    commits: Sequence[str] = (),
) -> list[GuardHit]:
    """The guard rules ``action`` meets on the page (``url``, ``axtree``, ``elements``, the
    elements' ``boxes`` for coordinate actions) of a session whose origin is ``origin``
    (``commits``: the operator's patterns of GETs that commit); empty when none (or the policy
    holds nothing). A string of several calls meets the union of what each call meets, the
    first hit of each rule kept."""
    if not policy.enabled:
        return []
    hits: list[GuardHit] = []

    def hit(rule: GuardRule, detail: str) -> None:
        if rule in policy.rules and all(h.rule != rule for h in hits):
            hits.append(GuardHit(rule=rule, detail=detail[:1024]))

    for target in action_targets(action, axtree, boxes):
        _judge(policy, target, hit, url=url, axtree=axtree, elements=elements, origin=origin)
        if "commit_get" in policy.rules:
            _commit_get(policy, target, hit, url=url, axtree=axtree, elements=elements,
                        commits=commits)  # fmt: skip
    return hits


def _commit_get(
    policy: GuardPolicy,
    target: Target,
    hit: Callable[[GuardRule, str], None],
    *,
    url: str,
    axtree: str,
    elements: Mapping[str, ElementFacts] | None,
    commits: Sequence[str],
) -> None:
    """``commit_get``: the call sends a GET the operator named, or activates a link or GET
    form named for deleting or confirming (URLs read as the browser reads them)."""
    if target.url is not None:
        dest = join_url(url, target.url)
        if pattern := matching_commit("GET", dest, commits):
            hit("commit_get", f"goes to {_short(dest)}, a GET that commits ({pattern})")
        return
    if target.bid is None or not target.activates:
        return
    facts = (elements or {}).get(target.bid)
    if facts is None or facts.download:
        return
    method = (facts.form_method or "GET").upper()
    if facts.submits and method == "GET":
        dest, what = join_url(url, facts.form_action or url), "submits a GET form"
    elif facts.href and not facts.submits:
        dest, what = join_url(url, facts.href), "is a link"
    else:
        return
    role, name = ax_line(axtree, target.bid)
    element = f"element {target.bid}" + (f" ({role} {name!r})" if role else "") + target.where
    if pattern := matching_commit("GET", dest, commits):
        hit("commit_get", f"{element} {what} to {_short(dest)}, a GET that commits ({pattern})")
    elif name and (word := policy.matching_get_word(name)):
        hit(
            "commit_get",
            f"{element} {what} to {_short(dest)} named with {word!r}: predicted to commit",
        )


def _judge(
    policy: GuardPolicy,
    target: Target,
    hit: Callable[[GuardRule, str], None],
    *,
    url: str,
    axtree: str,
    elements: Mapping[str, ElementFacts] | None,
    origin: str | None,
) -> None:
    """Every rule one call meets, told to ``hit``."""
    if target.url is not None:
        dest = join_url(url, target.url)
        if _leaves(dest, origin):
            hit("leaves_origin", f"goes to {_short(dest)}, outside {origin}")
        if policy.is_download(dest):
            hit("download", f"goes to the file {_short(dest)}")
        return
    if target.bid is None or not target.activates:
        return
    bid = target.bid
    facts = (elements or {}).get(bid)
    role, name = ax_line(axtree, bid)
    what = f"element {bid}" + (f" ({role} {name!r})" if role else "") + target.where
    if name and "name_match" in policy.rules and (word := policy.matching_word(name)):
        hit("name_match", f"{what} is named with {word!r}")
    if facts is None:
        return
    method = (facts.form_method or "GET").upper()
    if facts.submits and method not in ("GET", "DIALOG"):
        dest = f" to {_short(facts.form_action)}" if facts.form_action else ""
        hit("form_submit", f"{what} submits a {method} form{dest}")
    if facts.href:
        if _leaves(facts.href, origin):
            hit("leaves_origin", f"{what} links to {_short(facts.href)}, outside {origin}")
        if facts.download or policy.is_download(facts.href):
            hit("download", f"{what} downloads {_short(facts.href)}")
    elif facts.download:
        hit("download", f"{what} is a download link")
    if facts.submits and method != "DIALOG" and _leaves(facts.form_action, origin):
        hit(
            "leaves_origin",
            f"{what} submits a form to {_short(facts.form_action or '')}, outside {origin}",
        )


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


_INVISIBLE = re.compile(
    "["
    + "".join(
        re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
        for lo, hi, _ in ESCAPED_RANGES
    )
    + "]"
)


def name_key(text: str) -> str:
    """``text`` as the words are matched in it: compatibility-folded (NFKC), every character
    the display escapes (protocol/terminal_text.py's ``ESCAPED_RANGES``: controls, bidi,
    zero-width, joiners, variation selectors, tags) removed (the spacing ones made a space),
    then each letter as its confusable skeleton (UTS #39: Cyrillic "В" reads "B", Greek "ο"
    reads "o") and case-folded. A page cannot hide a word from the words with a character a
    person does not see, nor with a letter that looks like the word's."""
    text = unicodedata.normalize("NFKC", text)
    text = _INVISIBLE.sub(lambda m: " " if m.group().isspace() else "", text)
    key = "".join(_letter_key(c) for c in unicodedata.normalize("NFD", text))
    return key.translate(_ASCII_ALIKES)


#: UTS #39's prototypes among ASCII, case-folded: "0rder" reads "order", "Subm1t" and "SUBMlT"
#: read "submit" ("I" is "l"'s look-alike and "i"'s capital), "rn" reads "m".
_ASCII_ALIKES = str.maketrans({"0": "o", "1": "l", "|": "l", "i": "l", "m": "rn"})


def _word_pattern(word: str) -> re.Pattern[str]:
    """A configured word (or phrase) as a whole-word pattern over :func:`name_key` text, its
    words across any run of spaces."""
    alts = r"\s+".join(re.escape(name_key(w)) for w in word.split())
    return re.compile(rf"(?<!\w)(?:{alts})(?!\w)")


def _letter_key(c: str) -> str:
    """One character's key: the character case-folded where that is an ASCII letter or digit,
    else the case-folded skeleton of the character, of its capital or of its folded form,
    whichever first is one (Cyrillic "В" folds to "в", whose own skeleton is not "b"), else
    the folded form's skeleton."""
    folded = c.casefold()
    prototypes = _prototypes()

    def skeleton(text: str) -> str:
        return "".join(prototypes.get(x, x) for x in text)

    for key in (folded, skeleton(c).casefold(), skeleton(c.upper()).casefold()):
        if key.isascii() and key.isalnum():
            return key
    return skeleton(folded)


@cache
def _prototypes() -> dict[str, str]:
    """Each character's confusable prototype (UTS #39's confusables, as the
    ``confusable_homoglyphs`` package ships them: a prototype lists its look-alikes, each
    look-alike names its prototype; of a pair that name only each other, the lower code point
    is the prototype), lower-cased where the prototype is a cased letter."""
    path = resources.files("confusable_homoglyphs").joinpath("confusables.json")
    raw = json.loads(path.read_text(encoding="utf-8"))
    marks = "\u200e\u200f"
    table = {k.strip(marks): [e["c"].strip(marks) for e in v] for k, v in raw.items()}
    out: dict[str, str] = {}
    for k, alikes in table.items():
        if len(k) != 1 or len(alikes) != 1 or alikes[0] == k:
            continue
        proto = alikes[0]
        if len(proto) == 1 and len(table.get(proto, ())) == 1:
            proto = min(k, proto)
        if proto != k:
            out[k] = proto
    return out


def join_url(base: str, url: str) -> str:
    """``url`` read against the page at ``base`` as a browser reads it (the WHATWG URL
    standard: backslashes as slashes, tabs and newlines removed, surrounding controls and
    spaces stripped, hosts as punycode); ``url`` as it is where neither reads as a URL."""
    try:
        return ada_url.join_url(base, url)
    except ValueError:
        try:
            return ada_url.URL(url).href
        except ValueError:
            return url


def _leaves(url: str | None, origin: str | None) -> bool:
    """``url`` is on another origin than ``origin`` (a ``javascript:`` URL stays on the page;
    ``mailto:``, ``data:`` and the like leave it)."""
    if not url or origin is None:
        return False
    try:
        if ada_url.URL(url).protocol == "javascript:":
            return False
    except ValueError:
        return True  # the browser reads no URL there: nothing says it stays
    return origin_of(url) != origin


def _short(url: str, limit: int = 200) -> str:
    return url if len(url) <= limit else url[: limit - 1] + "…"


def origin_of(url: str) -> str | None:
    """The origin a browser gives ``url`` (WHATWG): ``scheme://host[:port]`` of an http(s),
    ws(s) or ftp URL (host as punycode, default port dropped, any userinfo dropped);
    ``file://`` for every file URL; None for the opaque rest (``about:``, ``data:``,
    ``mailto:``) and for text that is no URL."""
    try:
        parsed = ada_url.URL(url)
    except ValueError:
        return None
    if parsed.protocol == "file:":
        return "file://"
    origin = parsed.origin
    return None if origin == "null" else origin


def session_origin(*urls: str | None) -> str | None:
    """The session's origin: the first origin of ``urls`` (its ``start_url``, then its first
    observation's URL); ``file://`` for a page read from a file."""
    for u in urls:
        o = origin_of(u) if u else None
        if o is not None:
            return o
    return None


def describe_guards(policy: GuardPolicy) -> str:
    """The guard policy in one line, as ``serve`` shows it at start."""
    if not policy.enabled:
        return "guards: off (no action is held for a person whatever its reward)"
    parts = []
    if "form_submit" in policy.rules:
        parts.append("submits a form by a method other than GET")
    if "name_match" in policy.rules:
        words = ", ".join(policy.words) if policy.words else "(no words)"
        parts.append(f"activates an element named with one of: {words}")
    if "leaves_origin" in policy.rules:
        parts.append("leaves the session's origin")
    if "download" in policy.rules:
        parts.append("downloads a file")
    if "commit_get" in policy.rules:
        parts.append("sends a GET that commits (a link or GET form named for deleting or "
                     "confirming, or one serve --commits names)")  # fmt: skip
    return (
        "guards: whatever its reward, a person must decide a step that "
        + "; or ".join(parts)
        + " (nobody paired to decide: refused at once)"
    )


def parse_rules(names: Iterable[str]) -> frozenset[GuardRule]:
    """Rule names from the command line, checked."""
    out: set[GuardRule] = set()
    for n in names:
        if n not in ALL_RULES:
            raise ValueError(f"unknown guard rule {n!r}; known: {', '.join(ALL_RULES)}")
        out.add(n)
    return frozenset(out)
