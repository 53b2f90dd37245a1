"""Guards on actions that commit, whatever their reward (sans-I/O; issue 35).

A guarded action waits for a person even when the judge is sure of it: the reward says how
much an action helps the task, not whether a person would let it run. The rules read only
what the page says of the target (the capture's :class:`ElementFacts`, the AX tree's line of
its bid) and the action string; never a model's text.

- ``form_submit``: a click, or Enter/Space, on an element that submits a form whose method is
  not GET (nor DIALOG, which submits nothing);
- ``name_match``: a click, or Enter/Space, on an element whose accessible name holds one of
  :attr:`GuardPolicy.words` as a whole word (case-insensitive);
- ``leaves_origin``: a ``goto`` to, a link to, or a form submitted to another origin than the
  session's (its ``start_url``'s, else its first observation's);
- ``download``: a link with ``download``, or a ``goto``/link to a file whose name ends with one
  of :attr:`GuardPolicy.extensions`.

``keyboard_press('Enter')`` and ``keyboard_type`` with a newline act on the focused element
(the AX tree's ``focused`` line). An element the capture sent no facts for is judged by its
AX-tree name only.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import get_args
from urllib.parse import urljoin, urlsplit

from webshepherd.protocol.actions import ActionError, parse_action, read_recorded
from webshepherd.protocol.common import ElementFacts, GuardHit, GuardRule

__all__ = [
    "ALL_RULES",
    "DEFAULT_EXTENSIONS",
    "DEFAULT_WORDS",
    "GuardPolicy",
    "ax_line",
    "describe_guards",
    "guard_hits",
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
    """Which rules hold a step for a person, the words of ``name_match`` and the file
    extensions of ``download``. The default holds all four; ``GuardPolicy(rules=frozenset())``
    holds nothing."""

    rules: frozenset[GuardRule] = frozenset(ALL_RULES) - {"name_match"}  # names: opt-in
    words: tuple[str, ...] = DEFAULT_WORDS
    extensions: tuple[str, ...] = DEFAULT_EXTENSIONS

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
        return GuardPolicy(self.rules - set(rules), self.words, self.extensions)

    @cached_property
    def _words(self) -> re.Pattern[str] | None:
        words = [_fold(w) for w in self.words if w.strip()]
        if not words:
            return None
        alts = "|".join(r"\s+".join(map(re.escape, w.split())) for w in words)
        return re.compile(rf"(?<!\w)(?:{alts})(?!\w)")

    def matching_word(self, name: str) -> str | None:
        """The first configured word in ``name`` (whole words, case-insensitive), or None."""
        pattern = self._words
        m = pattern.search(_fold(name)) if pattern else None
        return m.group(0) if m else None

    def is_download(self, url: str) -> bool:
        path = urlsplit(url).path.rsplit("/", 1)[-1].lower()
        return "." in path and path.rsplit(".", 1)[1] in {e.lower() for e in self.extensions}


@dataclass
class _Target:
    """What the action does to the page."""

    bid: str | None = None
    activates: bool = False  # a click, or a key that activates the element
    url: str | None = None  # a goto's destination
    notes: list[str] = field(default_factory=list)


def guard_hits(
    policy: GuardPolicy,
    action: str,
    *,
    url: str,
    axtree: str,
    elements: Mapping[str, ElementFacts] | None,
    origin: str | None,
) -> list[GuardHit]:
    """The guard rules ``action`` meets on the page (``url``, ``axtree``, ``elements``) of a
    session whose origin is ``origin``; empty when none (or the policy holds nothing)."""
    if not policy.enabled:
        return []
    target = _target(action, axtree)
    hits: list[GuardHit] = []

    def hit(rule: GuardRule, detail: str) -> None:
        if rule in policy.rules and all(h.rule != rule for h in hits):
            hits.append(GuardHit(rule=rule, detail=detail[:1024]))

    if target.url is not None:
        dest = urljoin(url, target.url)
        if _leaves(dest, origin):
            hit("leaves_origin", f"goes to {_short(dest)}, outside {origin}")
        if policy.is_download(dest):
            hit("download", f"goes to the file {_short(dest)}")
        return hits
    if target.bid is None or not target.activates:
        return hits
    bid = target.bid
    facts = (elements or {}).get(bid)
    role, name = ax_line(axtree, bid)
    what = f"element {bid}" + (f" ({role} {name!r})" if role else "")
    if name and (word := policy.matching_word(name)) is not None:
        hit("name_match", f"{what} is named with {word!r}")
    if facts is None:
        return hits
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
    return hits


def _target(action: str, axtree: str) -> _Target:
    """The element or URL ``action`` acts on, and whether it activates the element."""
    try:
        parsed = parse_action(action)
        name, args = parsed.name, dict(parsed.args)
    except ActionError:  # another syntax (WebArena's ``click [12]``): read loosely
        rec = read_recorded(action)
        name = rec.op
        args = {"url": rec.args[0]} if rec.op == "goto" and rec.args else {}
        if rec.element is not None:
            args["bid"] = rec.element
        if rec.op == "press" and len(rec.args) > 1:
            args["key_comb"] = rec.args[1]
    if name == "goto" and isinstance(args.get("url"), str):
        return _Target(url=args["url"])
    if name in _CLICKS:
        return _Target(bid=_str(args.get("bid")), activates=True)
    if name == "press":
        return _Target(bid=_str(args.get("bid")), activates=_activating(args.get("key_comb")))
    if name == "keyboard_press":
        return _Target(bid=_focused(axtree), activates=_activating(args.get("key")))
    if name == "keyboard_type":
        return _Target(bid=_focused(axtree), activates="\n" in str(args.get("text", "")))
    return _Target(bid=_str(args.get("bid")))


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


def _fold(text: str) -> str:
    """Compatibility-folded, case-folded, with format characters (zero-width, bidi) removed:
    a page cannot split a word with an invisible character to slip it past the words."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(c for c in text if unicodedata.category(c) != "Cf").casefold()


def _leaves(url: str | None, origin: str | None) -> bool:
    """``url`` is on another origin than ``origin`` (a ``javascript:`` URL stays on the page;
    ``mailto:``, ``file:`` and the like leave it)."""
    if not url or origin is None or url.strip().lower().startswith("javascript:"):
        return False
    return origin_of(url) != origin


def _short(url: str, limit: int = 200) -> str:
    return url if len(url) <= limit else url[: limit - 1] + "…"


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL (default ports dropped), else None."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    if port is None or (scheme, port) in (("http", 80), ("https", 443)):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def session_origin(*urls: str | None) -> str | None:
    """The session's origin: the first http(s) origin of ``urls`` (its ``start_url``, then its
    first observation's URL)."""
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
