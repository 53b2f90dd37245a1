"""A text "browser" for the demo: loads pages over HTTP and runs BrowserGym-style actions.

Actions are read by the project's one parser (:mod:`webshepherd.protocol.actions`);
the text browser runs ``click('bid')``, ``fill('bid', 'text')``,
``press('bid', 'Enter')``, ``go_back()``, ``goto('url')``, and the no-ops
``scroll(x, y)``, ``hover('bid')``, ``focus('bid')``, ``noop()``. Clicking a link follows it;
clicking a submit button (or pressing Enter in a field) submits its form with
the typed values, GET or POST. Observations come from :mod:`.axtree`: the text browser's
own tree, or (``chromium=True``) the shop's pages as Chromium renders them through the
extension's capture, with Chromium's bids and focus.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlencode, urljoin

from webshepherd.daemon.demo.axtree import (
    Node,
    Page,
    parse_html,
    role_of,
    to_axtree,
    to_chromium_axtree,
)
from webshepherd.daemon.demo.element_facts import element_facts
from webshepherd.protocol.actions import ParsedAction, parse_action
from webshepherd.protocol.agents.environment import ActionError
from webshepherd.protocol.common import ElementFacts

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy


@dataclass
class Observation:
    url: str
    title: str
    axtree: str


#: Actions the text browser accepts and ignores, and those it runs on an element.
NO_OPS = frozenset({"scroll", "hover", "noop", "focus"})
RUNS = frozenset({"click", "fill", "press"})


class Browser:
    """One tab: the current page, typed field values, the focused element's bid, and the
    history; ``chromium``: pages rendered (and bids numbered) as Chromium's capture has them."""

    def __init__(self, timeout_s: float = 10.0, *, chromium: bool = False) -> None:
        self.timeout_s = timeout_s
        self.chromium = chromium
        self.page: Page | None = None
        self.values: dict[str, str] = {}
        self.focused: str | None = None
        self.history: list[str] = []

    # -- loading -----------------------------------------------------------
    def _load(self, request: urllib.request.Request) -> None:
        try:
            with _OPENER.open(request, timeout=self.timeout_s) as resp:
                html = resp.read().decode("utf-8", "replace")
                final_url = resp.geturl()
        except urllib.error.HTTPError as err:  # an error page is still a page
            html = err.read().decode("utf-8", "replace")
            final_url = err.geturl()
        if self.page is not None:
            self.history.append(self.page.url)
        self.page = parse_html(html, final_url, chromium=self.chromium)
        self.values = {}
        self.focused = None

    def goto(self, url: str) -> None:
        self._load(urllib.request.Request(url))

    @property
    def url(self) -> str:
        return self.page.url if self.page else "about:blank"

    def observe(self) -> Observation:
        assert self.page is not None, "load a page first"
        if self.chromium:
            tree = to_chromium_axtree(self.page, self.values, self.focused)
        else:
            tree = to_axtree(self.page, self.values)
        return Observation(self.page.url, self.page.title, tree)

    def elements(self) -> dict[str, ElementFacts]:
        """What the page says of its links and form submitters, by bid (the guards read it)."""
        assert self.page is not None, "load a page first"
        return element_facts(self.page)

    # -- acting ------------------------------------------------------------
    def _element(self, bid: object) -> Node:
        assert self.page is not None
        node = self.page.by_bid.get(str(bid))
        if node is None:
            raise ActionError(f"no element with bid {bid!r} on {self.page.url}")
        return node

    def act(self, action: str | ParsedAction) -> None:
        """Run one action; raises :class:`ActionError` for one it cannot run."""
        act = parse_action(action) if isinstance(action, str) else action
        name, args = act.name, act.args
        if name in NO_OPS:
            return
        if name == "goto":
            return self.goto(urljoin(self.url, args["url"]))
        if name == "go_back":
            if self.history:
                url = self.history.pop()
                self.goto(url)
                self.history.pop()  # goto pushed the page we came back from
            return
        if name not in RUNS:
            raise ActionError(f"the text browser has no {name}")
        node = self._element(args["bid"])
        self.focused = node.bid if _focusable(node) else None
        if name == "fill":
            if role_of(node) not in {"textbox", "searchbox", "spinbutton"}:
                raise ActionError(f"element {node.bid} is not a text field")
            self.values[node.bid] = args["value"]
        elif name == "press":
            form = node.form()
            if args["key_comb"] == "Enter" and form is not None:
                self._submit(form)
        else:
            self._click(node)

    def _click(self, node: Node) -> None:
        target: Node | None = node
        while target is not None and target.tag not in {"a", "button", "input"}:
            target = target.parent  # a click on a link's text follows the link
        if target is None:
            return  # clicking plain text does nothing
        if target.tag == "a" and "href" in target.attrs:
            self.goto(urljoin(self.url, target.attrs["href"]))
        elif target.tag == "input" and target.attrs.get("type") in {"checkbox", "radio"}:
            if target.attrs.get("type") == "radio" and (form := target.form()) is not None:
                for other in form.iter():
                    if other.tag == "input" and other.attrs.get("name") == target.attrs.get("name"):
                        other.attrs.pop("checked", None)
            target.attrs["checked"] = ""
        elif target.tag == "button" or target.attrs.get("type") in {"submit", "image"}:
            form = target.form()
            if form is not None and target.attrs.get("type", "submit") == "submit":
                self._submit(form)

    def _submit(self, form: Node) -> None:
        fields: list[tuple[str, str]] = []
        for el in form.iter():
            name = el.attrs.get("name")
            if not name or el.tag not in {"input", "textarea", "select"}:
                continue
            kind = el.attrs.get("type", "text")
            if kind in {"submit", "button", "reset"}:
                continue
            if kind in {"checkbox", "radio"} and "checked" not in el.attrs:
                continue
            fields.append((name, self.values.get(el.bid, el.attrs.get("value", ""))))
        action = urljoin(self.url, form.attrs.get("action", ""))
        data = urlencode(fields)
        if form.attrs.get("method", "get").lower() == "post":
            self._load(urllib.request.Request(action, data=data.encode(), method="POST"))
        else:
            self._load(urllib.request.Request(f"{action.split('?', 1)[0]}?{data}"))


def _focusable(node: Node) -> bool:
    """Whether a click or a typed key leaves the focus on ``node`` (its form controls)."""
    return node.tag in {"input", "button", "select", "textarea"} or (
        node.tag == "a" and "href" in node.attrs
    )
