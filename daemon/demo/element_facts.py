"""What the demo's text browser knows of each element an action may target: the same
:class:`~webshepherd.protocol.common.ElementFacts` the extension's capture reads from the DOM
(extension/src/capture/element-facts.ts, the same rules), here from the parsed HTML.

An element gets facts when activating it follows a link or submits a form: a link with an
``href`` (its absolute target, its ``download`` attribute), a submit button or input (the form's
method and action, the button's ``formmethod``/``formaction`` first), a text field whose Enter
submits its form (HTML's implicit submission: through the form's default button, or with no
such button when it is the form's only text field), and anything inside a link or a submit
button (a click on it activates them).
"""

from __future__ import annotations

from urllib.parse import urljoin

from webshepherd.daemon.demo.axtree import Node, Page
from webshepherd.protocol.common import ElementFacts

__all__ = ["element_facts"]

#: input types whose Enter submits the form (HTML's "fields that block implicit submission")
TEXT_TYPES = frozenset(
    {"text", "search", "url", "tel", "email", "password", "date", "month", "week", "time",
     "datetime-local", "number"}
)  # fmt: skip
_METHODS = {"get": "GET", "post": "POST", "dialog": "DIALOG"}


def element_facts(page: Page) -> dict[str, ElementFacts]:
    """bid -> facts, for every element of ``page`` that follows a link or submits a form."""
    out: dict[str, ElementFacts] = {}
    for node in page.root.iter():
        if not node.bid:
            continue
        facts = _facts(node, page.url)
        if facts is not None:
            out[node.bid] = facts
    return out


def _facts(node: Node, url: str) -> ElementFacts | None:
    target = _activates(node)
    if target is not None and target.tag == "a":
        return ElementFacts(
            tag=node.tag,
            href=_absolute(url, target.attrs["href"]),
            download="download" in target.attrs,
        )
    if target is not None:  # a submit button
        form = target.form()
        if form is None:
            return None
        return _submits(node.tag, form, target, url)
    if node.tag == "input" and _input_type(node) in TEXT_TYPES:
        form = node.form()
        if form is None:
            return None
        default = next((n for n in form.iter() if _is_submitter(n)), None)
        fields = [n for n in form.iter() if n.tag == "input" and _input_type(n) in TEXT_TYPES]
        if default is None and len(fields) > 1:
            return None  # Enter submits nothing
        return _submits(node.tag, form, default, url)
    return None


def _submits(tag: str, form: Node, submitter: Node | None, url: str) -> ElementFacts:
    sub = submitter.attrs if submitter is not None else {}
    method = sub.get("formmethod") if "formmethod" in sub else form.attrs.get("method", "get")
    action = sub.get("formaction") if sub.get("formaction") else form.attrs.get("action", "")
    return ElementFacts(
        tag=tag,
        submits=True,
        form_method=_METHODS.get((method or "").strip().lower(), "GET"),
        form_action=_absolute(url, action or ""),
    )


def _absolute(base: str, ref: str) -> str:
    """``ref`` resolved against ``base`` as a browser resolves it (an empty fragment, ``#``,
    is kept, as the URL standard keeps it)."""
    joined = urljoin(base, ref.strip())
    return joined + "#" if ref.strip().endswith("#") and not joined.endswith("#") else joined


def _activates(node: Node) -> Node | None:
    """The link or submit button a click on ``node`` activates (itself or an ancestor)."""
    at: Node | None = node
    while at is not None:
        if at.tag == "a" and "href" in at.attrs:
            return at
        if _is_submitter(at):
            return at
        at = at.parent
    return None


def _is_submitter(node: Node) -> bool:
    if node.tag == "button":
        return node.attrs.get("type", "submit").strip().lower() not in ("button", "reset")
    return node.tag == "input" and _input_type(node) in ("submit", "image")


def _input_type(node: Node) -> str:
    return node.attrs.get("type", "text").strip().lower() or "text"
