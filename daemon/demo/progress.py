"""What the shop knows about its task: how far each checklist item is, at any moment.

The shop's reference checklist has four items (search, open the cheapest, add it to the cart,
check out). Each has levels, read off the shop's own state (its cart and orders) and the page
the browser shows; the first two items, once reached, stay reached (they happened in the
history). The labels of an action follow the rule in docs/training.md:

- **Yes**: the item's goal holds after the action (reached now or earlier);
- **In Progress**: it does not hold yet, and the action moved it forward;
- **No**: otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from webshepherd.daemon.demo.agent import elements
from webshepherd.protocol.common import ItemLabel

if TYPE_CHECKING:
    from webshepherd.daemon.demo.shop import ShopState
    from webshepherd.daemon.demo.variants import ShopVariant

#: the highest level of each of the four items
TOP = (2, 1, 1, 3)


@dataclass(frozen=True)
class Progress:
    """Each item's level: search (typed 1, results shown 2), open (1), cart (1),
    checkout (on the checkout page 1, name filled 2, order placed 3)."""

    levels: tuple[int, int, int, int] = (0, 0, 0, 0)

    def done(self) -> tuple[bool, ...]:
        """Which items are done."""
        return tuple(now >= top for now, top in zip(self.levels, TOP, strict=True))

    def labels(self, before: Progress) -> tuple[ItemLabel, ...]:
        """Each item's label for the action that led from ``before`` to this."""
        out: list[ItemLabel] = []
        for now, then, top in zip(self.levels, before.levels, TOP, strict=True):
            out.append("yes" if now >= top else "in_progress" if now > then else "no")
        return tuple(out)


def measure(shop: ShopVariant, state: ShopState, url: str, axtree: str, was: Progress) -> Progress:
    """The task's progress after the browser reached ``url`` showing ``axtree``, with the shop
    in ``state``; ``was``: the progress before (what the history already reached)."""
    target = shop.target()
    path = urlsplit(url).path.rstrip("/") or "/"
    els = elements(axtree)
    search = 0
    if path == "/search":
        q = parse_qs(urlsplit(url).query).get("q", [""])[0]
        if any(p["id"] == target["id"] for p in state.search(q)):
            search = 2
    elif path == "/":
        box = next((e for e in els if e.role == "searchbox"), None)
        if box is not None and f"value={shop.kind.query!r}" in box.rest:
            search = 1
    opened = int(path == f"/product/{target['id']}")
    ordered = any(target["name"] in o["items"] and o["name"] == shop.shopper for o in state.orders)
    cart = int(target["id"] in state.cart or ordered)
    checkout = 0
    if ordered:
        checkout = 3
    elif path == "/checkout" and target["id"] in state.cart:
        name = next((e for e in els if e.role == "textbox" and e.name.startswith("Full")), None)
        checkout = 2 if name is not None and f"value={shop.shopper!r}" in name.rest else 1
    w = was.levels
    levels = (
        max(search, w[0]) if w[0] >= TOP[0] else search,  # results seen: stays done
        max(opened, w[1]),  # the product page was opened: stays done
        cart,
        checkout,
    )
    return replace(was, levels=levels)
