"""The demo's scripted agent: reads the AX-tree text, proposes one good and some bad actions.

It knows the shop's task and proposes, on every page, the action that makes
progress (``good``) plus distractors drawn at random (``bad``): wrong links,
wrong products, wrong search terms, no-ops. Which one runs is decided by the
daemon's rewards (the best one), not by this script.

For the reward-guided agent loop (``webshepherd.protocol.agents``), :meth:`ShopAgent.sample`
repeats proposals as a sampling policy would (so proposal counts, and their ties, matter),
:meth:`ShopAgent.plan` is a full plan in advance, and :class:`ShopPolicy` wraps it all as a
policy (``propose`` / ``refine`` / ``plan``).
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from webshepherd.daemon.demo.variants import KINDS, Kind, ShopVariant, variant
from webshepherd.protocol.agents.best_of_n import action_key
from webshepherd.protocol.common import Candidate

if TYPE_CHECKING:
    from webshepherd.protocol.agents import PageState, PolicyContext, RefineRequest

_ORIGINAL = variant(0)
TASK = _ORIGINAL.intent
CHECKLIST = _ORIGINAL.checklist
SHOPPER = _ORIGINAL.shopper
PLAN = (
    "Type usb-c cable into the search box",
    "Run the search",
    "Open the cheapest USB-C cable in the results",
    "Add the cable to the cart",
    "Proceed to checkout",
    "Fill in the buyer's name, Ada Lovelace",
    "Place the order",
    "Tell the user the order number",
)
"""A full plan in advance whose steps the good actions' thoughts follow (lexically)."""
QUERY = _ORIGINAL.kind.query

_REPR = r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""  # a Python str repr
_LINE = re.compile(rf"^\t*\[(\w+)\] (\S+) {_REPR}(.*)$")
_TEXT = re.compile(rf"^\t*StaticText {_REPR}")
_PRICE = re.compile(r"\$(\d+(?:\.\d\d)?)")
_SOLD_OUT = "StaticText 'Sold out:"  # the notice on a sold-out product's page


@dataclass
class Element:
    bid: str
    role: str
    name: str
    rest: str
    line: int


@dataclass
class Proposal:
    thought: str
    action: str
    good: bool


def elements(axtree: str) -> list[Element]:
    out = []
    for i, line in enumerate(axtree.splitlines()):
        m = _LINE.match(line)
        if m:
            name = ast.literal_eval(m.group(3))
            out.append(Element(m.group(1), m.group(2), name, m.group(4), i))
    return out


def _find(els: list[Element], role: str, prefix: str = "") -> Element | None:
    return next((e for e in els if e.role == role and e.name.startswith(prefix)), None)


def results(axtree: str) -> list[tuple[Element, float]]:
    """(product link, price) pairs of a results list."""
    lines = axtree.splitlines()
    found = []
    for e in elements(axtree):
        if e.role != "link" or e.line + 1 >= len(lines):
            continue
        t = _TEXT.match(lines[e.line + 1])
        price = _PRICE.search(ast.literal_eval(t.group(1))) if t else None
        if price:
            found.append((e, float(price.group(1))))
    return found


def _elsewhere(kind: Kind) -> tuple[str, str]:
    """Another kind's plural and query: the wrong search for ``kind``'s task."""
    other = KINDS[(KINDS.index(kind) + 1) % len(KINDS)]
    return other.plural, other.query


class ShopAgent:
    """Proposes candidates for the shop task; ``done`` once the order is confirmed."""

    def __init__(
        self,
        seed: int = 0,
        bad_per_step: int = 2,
        shop: ShopVariant | None = None,
        backtrack: bool = True,
    ) -> None:
        self.rng = random.Random(seed)
        self.bad_per_step = bad_per_step
        self.shop = shop if shop is not None else _ORIGINAL
        #: whether it proposes going back from a sold-out product page (a tree search's
        #: policy does not: returning to an earlier state is the search's job)
        self.backtrack = backtrack
        self.sold_out: set[str] = set()  # products whose page said they are sold out
        #: the last results' products of the kind not then known sold out, cheapest first
        self.listed: list[str] = []
        self.counts_rng = random.Random(seed + 1)  # for sample(); propose()'s draws unchanged

    @staticmethod
    def done(url: str) -> bool:
        return urlsplit(url).path.startswith("/order/")

    def knows(self, axtree: str) -> bool:
        """Whether ``axtree`` is a page of its shop (every one links home): the only pages it
        proposes for."""
        return _find(elements(axtree), "link", self.shop.shop) is not None

    def propose(self, url: str, axtree: str) -> list[Proposal]:
        els = elements(axtree)
        good = self._good(urlsplit(url).path, axtree, els)
        bad = [b for b in self._bad(urlsplit(url).path, axtree, els) if b.action != good.action]
        picked = self.rng.sample(bad, min(self.bad_per_step, len(bad)))
        proposals = [good, *picked]
        self.rng.shuffle(proposals)
        return proposals

    def good(self, url: str, axtree: str) -> Proposal:
        """The action that makes progress on this page."""
        return self._good(urlsplit(url).path, axtree, elements(axtree))

    def plan(self) -> list[str]:
        """The shop task's plan, written before the first action."""
        return list(PLAN)

    def sample(self, url: str, axtree: str) -> list[Proposal]:
        """Proposals repeated as N policy samples would be: the good one twice (once with
        double quotes, the same action once normalised), each bad one once or twice, so
        the good one is sometimes tied in frequency with a bad one."""
        proposals = self.propose(url, axtree)
        out: list[Proposal] = []
        for p in proposals:
            out.append(p)
            if p.good:
                out.append(Proposal(p.thought, p.action.replace("'", '"'), True))
            elif self.counts_rng.random() < 0.5:
                out.append(p)
        return out

    def _good(self, path: str, axtree: str, els: list[Element]) -> Proposal:
        kind = self.shop.kind
        noun = kind.name.split()[-1]
        if path.startswith("/order/"):
            number = path.rsplit("/", 1)[-1]
            return Proposal(
                "The order is confirmed; tell the user the order number.",
                f"send_msg_to_user('Order {number} is placed.')",
                True,
            )
        cart = _find(els, "link", "Cart (")
        in_cart = bool(cart and not cart.name.startswith("Cart (0"))
        if path == "/search":
            wanted = self._wanted(axtree)
            if wanted:
                link, price = min(wanted, key=lambda ep: ep[1])
                self.listed = [e.name for e, _ in wanted]
                return Proposal(
                    f"The cheapest {kind.name} listed is '{link.name}' at ${price:.2f}.",
                    f"click('{link.bid}')",
                    True,
                )
            new = _find(els, "link", "New search")
            if new:
                return Proposal(
                    f"These results hold no {kind.name}; search again.", f"click('{new.bid}')", True
                )
        if path.startswith("/product/"):
            heading = _find(els, "heading")
            add = _find(els, "button", "Add to cart")
            if heading and _SOLD_OUT in axtree and not in_cart:
                self.sold_out.add(heading.name)
                back = _find(els, "link", "Back to results")
                if self.backtrack and back:
                    return Proposal(
                        f"'{heading.name}' is sold out; back to the results.",
                        f"click('{back.bid}')",
                        True,
                    )
                return Proposal(
                    f"'{heading.name}' is sold out; look further down the page.",
                    "scroll(0, 400)",
                    True,
                )
            # only the cheapest listed product not seen sold out is added; on another one's
            # page (a branch a search tried) it goes back to the results
            chosen = heading and heading.name == self._cheapest_known()
            if heading and add and chosen and not in_cart:
                return Proposal(
                    f"This is the cheapest {kind.name}; add it to the cart.",
                    f"click('{add.bid}')",
                    True,
                )
            back = _find(els, "link", "Back to results")
            if back and not in_cart:
                return Proposal(
                    "Not the product I want; back to the results.", f"click('{back.bid}')", True
                )
        if path == "/checkout":
            name = _find(els, "textbox", "Full name")
            order = _find(els, "button", "Place order")
            if name and "value=" not in name.rest:
                return Proposal(
                    "The order needs the buyer's name.",
                    f"fill('{name.bid}', '{self.shop.shopper}')",
                    True,
                )
            if order:
                return Proposal(
                    "Name filled and standard delivery chosen; place the order.",
                    f"click('{order.bid}')",
                    True,
                )
        if path == "/cart" and in_cart:
            go = _find(els, "link", "Proceed to checkout")
            if go:
                return Proposal(
                    f"The {noun} is in the cart; proceed to checkout.", f"click('{go.bid}')", True
                )
        if in_cart and cart:
            return Proposal(
                f"The {noun} is already in the cart; open the cart.", f"click('{cart.bid}')", True
            )
        box = _find(els, "searchbox")
        if path == "/" and box:
            if f"value={kind.query!r}" in box.rest:
                button = _find(els, "button", "Search")
                if button:
                    return Proposal(
                        "The query is typed; run the search.", f"click('{button.bid}')", True
                    )
            return Proposal(
                f"The search box is [{box.bid}]; search for {kind.plural}.",
                f"fill('{box.bid}', '{kind.query}')",
                True,
            )
        home = _find(els, "link", self.shop.shop)
        assert home is not None, "every shop page links home"
        return Proposal(
            "Wrong page for this task; go back to the shop's home page.",
            f"click('{home.bid}')",
            True,
        )

    @property
    def target(self) -> str | None:
        """The cheapest wanted product's name in the last results, once seen."""
        return self.listed[0] if self.listed else None

    def _cheapest_known(self) -> str | None:
        """The cheapest product of the last results not seen sold out since."""
        return next((n for n in self.listed if n not in self.sold_out), self.target)

    def _wanted(self, axtree: str) -> list[tuple[Element, float]]:
        """Listed products of the task's kind not known to be sold out, cheapest first."""
        found = [
            (e, p)
            for e, p in results(axtree)
            if self.shop.matches(e.name) and e.name not in self.sold_out
        ]
        return sorted(found, key=lambda ep: ep[1])

    def _bad(self, path: str, axtree: str, els: list[Element]) -> list[Proposal]:
        bad = [Proposal("Let me scroll down to see more.", "scroll(0, 400)", False)]
        heading = _find(els, "heading")
        if heading:
            bad.append(Proposal("Click the page title.", f"click('{heading.bid}')", False))
        box = _find(els, "searchbox")
        if box:
            other = self.shop.kind if self.shop.number != 0 else None
            label, query = ("HDMI cables", "hdmi cable") if other is None else _elsewhere(other)
            bad.append(Proposal(f"Search for {label}.", f"fill('{box.bid}', '{query}')", False))
        if path == "/search":
            wanted = self._wanted(axtree)
            runner_up = wanted[1][0].name if len(wanted) > 1 else None
            for link, price in results(axtree):
                if self.target is None or link.name != self.target:
                    thought = (
                        f"The next cheapest {self.shop.kind.name} listed is '{link.name}' at "
                        f"${price:.2f}."
                        if link.name == runner_up
                        else f"'{link.name}' looks good at ${price:.2f}."
                    )
                    bad.append(Proposal(thought, f"click('{link.bid}')", False))
        if path == "/checkout":
            express = _find(els, "radio", "Express")
            if express:
                bad.append(
                    Proposal(
                        "Faster is better: choose express delivery.",
                        f"click('{express.bid}')",
                        False,
                    )
                )
        return bad


class ShopPolicy:
    """:class:`ShopAgent` as a policy of the agent loop (``propose``, ``refine``, ``plan``)."""

    def __init__(
        self,
        seed: int = 0,
        bad_per_step: int = 2,
        shop: ShopVariant | None = None,
        backtrack: bool = True,
    ) -> None:
        self.agent = ShopAgent(seed=seed, bad_per_step=bad_per_step, shop=shop, backtrack=backtrack)

    def propose(self, state: PageState, context: PolicyContext) -> list[Candidate]:
        proposals = self.agent.sample(state.url, state.axtree)
        gone = {action_key(a) for a in context.rejected}
        kept = [p for p in proposals if action_key(p.action) not in gone] or proposals
        return [Candidate(thought=p.thought, action=p.action) for p in kept]

    def refine(self, request: RefineRequest) -> Candidate:
        """The scripted agent "learns" from the feedback: it proposes its good action."""
        good = self.agent.good(request.state.url, request.state.axtree)
        return Candidate(
            thought=f"Reconsidered after the feedback. {good.thought}", action=good.action
        )

    def plan(self, intent: str, state: PageState) -> list[str]:
        return self.agent.plan()
