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

import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from typing import get_args

import ada_url
from webshepherd.daemon.sessions.action_targets import (
    Target,
    action_targets,
    ax_line,
    coordinate_notes,
)
from webshepherd.protocol.commits import matching_commit, url_origin
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
    return url_origin(url) != origin


def _short(url: str, limit: int = 200) -> str:
    return url if len(url) <= limit else url[: limit - 1] + "…"


def session_origin(*urls: str | None) -> str | None:
    """The session's origin: the first origin of ``urls`` (its ``start_url``, then its first
    observation's URL); ``file://`` for a page read from a file."""
    for u in urls:
        o = url_origin(u) if u else None
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
