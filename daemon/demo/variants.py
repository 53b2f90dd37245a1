"""The bundled shop's variants: one structure, other products, prices, names and shoppers.

Variant 0 is the shop as it always was ("Volt & Wire", the cheapest USB-C cable, Ada
Lovelace). Variant ``n >= 1`` is drawn from ``random.Random(n)`` out of the pools below;
the tiny judge is trained on variants drawn from another seed space (:func:`training_variant`),
so ``webshepherd demo --variant N`` shows it a shop it never saw. Every variant has the same
task: buy the cheapest product of one kind and check out under one name. Some training shops
(and :func:`trap_variant`, the tree-search demo's shop) list a sold-out decoy of the kind.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

#: The shop's pages, stylesheet and original catalogue.
SITE = Path(__file__).resolve().parent / "site"


def load_products() -> list[dict[str, Any]]:
    """The original shop's catalogue (``site/products.json``)."""
    products: list[dict[str, Any]] = json.loads((SITE / "products.json").read_text("utf-8"))
    return products


@dataclass(frozen=True)
class Kind:
    """A kind of product: its name, plural, search query, the words a matching product's name
    holds, and how product names of that kind are made (``{brand}``, ``{size}``)."""

    name: str
    plural: str
    query: str
    words: tuple[str, ...]
    pattern: str
    sizes: tuple[str, ...]
    #: products that share a word with the kind but are not of it
    lookalikes: tuple[str, ...]


KINDS: tuple[Kind, ...] = (
    Kind(
        "USB-C cable",
        "USB-C cables",
        "usb-c cable",
        ("usb-c", "cable"),
        "{brand} USB-C cable, {size}",
        ("1 m", "1.5 m", "2 m", "3 m"),
        ("USB-C wall charger, 65 W", "USB-C hub, 7 ports", "USB-A to Micro-USB cable, 1 m"),
    ),
    Kind(
        "HDMI cable",
        "HDMI cables",
        "hdmi cable",
        ("hdmi", "cable"),
        "{brand} HDMI cable, {size}",
        ("1 m", "2 m", "5 m"),
        ("HDMI to VGA adapter", "HDMI switch, 3 ports", "Ethernet cable, 5 m"),
    ),
    Kind(
        "desk lamp",
        "desk lamps",
        "desk lamp",
        ("desk", "lamp"),
        "{brand} desk lamp, {size}",
        ("LED", "warm white", "clamp-on"),
        ("Floor lamp, 160 cm", "Desk organiser", "Lamp shade, linen"),
    ),
    Kind(
        "phone case",
        "phone cases",
        "phone case",
        ("phone", "case"),
        "{brand} phone case, {size}",
        ("clear", "leather", "silicone"),
        ("Phone stand, aluminium", "Laptop case, 14 inch", "Screen protector"),
    ),
    Kind(
        "water bottle",
        "water bottles",
        "water bottle",
        ("water", "bottle"),
        "{brand} water bottle, {size}",
        ("500 ml", "750 ml", "1 l"),
        ("Bottle brush", "Water filter jug", "Travel mug, 350 ml"),
    ),
    Kind(
        "yoga mat",
        "yoga mats",
        "yoga mat",
        ("yoga", "mat"),
        "{brand} yoga mat, {size}",
        ("4 mm", "6 mm", "travel"),
        ("Yoga block, cork", "Door mat, coir", "Exercise ball"),
    ),
    Kind(
        "wool socks",
        "wool socks",
        "wool socks",
        ("wool", "socks"),
        "{brand} wool socks, {size}",
        ("size 38-41", "size 42-45", "pack of 3"),
        ("Cotton socks, pack of 5", "Wool scarf", "Sock drawer organiser"),
    ),
    Kind(
        "laptop stand",
        "laptop stands",
        "laptop stand",
        ("laptop", "stand"),
        "{brand} laptop stand, {size}",
        ("aluminium", "foldable", "adjustable"),
        ("Laptop sleeve, 13 inch", "Monitor stand", "Phone stand"),
    ),
    Kind(
        "coffee grinder",
        "coffee grinders",
        "coffee grinder",
        ("coffee", "grinder"),
        "{brand} coffee grinder, {size}",
        ("manual", "electric", "burr"),
        ("Coffee beans, 1 kg", "Pepper grinder", "Coffee scale"),
    ),
    Kind(
        "backpack",
        "backpacks",
        "backpack",
        ("backpack",),
        "{brand} backpack, {size}",
        ("20 l", "28 l", "35 l"),
        ("Backpack rain cover", "Tote bag", "Duffel bag, 40 l"),
    ),
)
_BRANDS = (
    "FlexLink", "Basic", "ProCharge", "Northwind", "Aster", "Brightline", "Kestrel", "Lumo",
    "Tidal", "Orbit", "Granite", "Pebble", "Summit", "Vireo", "Cobalt", "Juniper",
)  # fmt: skip
_SHOPS = (
    "Volt & Wire", "Cable Corner", "Maple Market", "Nordic Basics", "Peak Outfitters",
    "Urban Cart", "Blue Door Goods", "Harbor Supply", "Copper Lane", "Little Depot",
)  # fmt: skip
_SHOPPERS = (
    "Ada Lovelace", "Grace Hopper", "Alan Turing", "Katherine Johnson", "Hedy Lamarr",
    "Tim Berners-Lee", "Margaret Hamilton", "Claude Shannon", "Radia Perlman", "Edsger Dijkstra",
    "Barbara Liskov", "John McCarthy",
)  # fmt: skip
_BLURBS = (
    "Sturdy and simple.", "Our best seller.", "Two-year warranty.", "Ships in a day.",
    "Recycled materials.", "A customer favourite.", "Compact and light.",
)  # fmt: skip


@dataclass(frozen=True)
class ShopVariant:
    """One shop: its name, the task's product kind and shopper, and its catalogue."""

    number: int | str
    shop: str
    kind: Kind
    shopper: str
    products: tuple[dict[str, Any], ...]
    heading: str = "Cables, chargers and hubs"
    categories: tuple[tuple[str, str], ...] = (("HDMI", "hdmi"), ("Chargers", "charger"))
    deals: tuple[str, ...] = field(default=())

    @property
    def intent(self) -> str:
        return (
            f"Buy the cheapest {self.kind.name} in the {self.shop} shop and check out as "
            f"{self.shopper}."
        )

    @property
    def checklist(self) -> str:
        """The reference checklist: what the shop knows the task's subgoals are."""
        k = self.kind
        return (
            f"Checklist 1: Search for {k.plural}\n"
            f"- Goal: The search results list the shop's {k.plural} with their prices.\n"
            f"Checklist 2: Open the cheapest {k.name}\n"
            f"- Goal: The product page of the lowest-priced {k.name} is open.\n"
            "Checklist 3: Add it to the cart\n"
            f"- Goal: The cart holds the cheapest {k.name}.\n"
            f"Checklist 4: Check out as {self.shopper}\n"
            "- Goal: The order is placed and its confirmation is shown."
        )

    def matches(self, name: str) -> bool:
        """Whether a product called ``name`` is of the task's kind."""
        low = name.lower()
        return all(w in low for w in self.kind.words)

    def target(self) -> dict[str, Any]:
        """The product the task asks for: the cheapest of the kind that can be ordered (a
        sold-out decoy is listed, but is never the target)."""
        return min(
            (p for p in self.products if self.matches(p["name"]) and not p.get("sold_out")),
            key=lambda p: p["price"],
        )


def _original() -> ShopVariant:
    return ShopVariant(
        0,
        "Volt & Wire",
        KINDS[0],
        "Ada Lovelace",
        tuple(load_products()),
        deals=("h1", "a2"),
        categories=(("HDMI", "hdmi"), ("Chargers", "charger"), ("Hubs", "hub")),
    )


def _drawn(number: int | str, rng: random.Random) -> ShopVariant:
    kind = rng.choice(KINDS)
    brands = rng.sample(_BRANDS, rng.randint(3, 5))
    prices = rng.sample(range(299, 4999, 50), len(brands) + 3)
    products: list[dict[str, Any]] = []
    for i, brand in enumerate(brands):
        name = kind.pattern.format(brand=brand, size=rng.choice(kind.sizes))
        products.append(
            {
                "id": f"p{i + 1}",
                "name": name,
                "price": prices[i] / 100,
                "tags": [*kind.words, kind.query],
                "blurb": rng.choice(_BLURBS),
            }
        )
    for j, name in enumerate(kind.lookalikes):
        # a lookalike may be cheaper than every product of the kind: "cheapest" must mean of it
        products.append(
            {
                "id": f"x{j + 1}",
                "name": name,
                "price": prices[len(brands) + j] / 100,
                "tags": [w for w in kind.words if w in name.lower()] or [name.split()[0].lower()],
                "blurb": rng.choice(_BLURBS),
            }
        )
    rng.shuffle(products)
    others = [k for k in KINDS if k is not kind]
    cats = tuple((k.plural.capitalize(), k.query) for k in rng.sample(others, 2))
    return ShopVariant(
        number,
        rng.choice(_SHOPS),
        kind,
        rng.choice(_SHOPPERS),
        tuple(products),
        heading=f"{kind.plural.capitalize()} and more",
        categories=cats,
        deals=tuple(p["id"] for p in rng.sample(products, 2)),
    )


def with_decoy(shop: ShopVariant, rng: random.Random, cheapest: bool = True) -> ShopVariant:
    """``shop`` with a sold-out product of the task's kind (a decoy): listed in the results
    like any other, its product page says it is sold out and has no "Add to cart".
    ``cheapest``: priced below every other product of the kind (the trap), else above the
    target. Drawn from ``rng`` alone, so the rest of the shop is unchanged."""
    kind = shop.kind
    used = {p["name"].split()[0] for p in shop.products}
    brand = rng.choice([b for b in _BRANDS if b not in used] or list(_BRANDS))
    low = shop.target()["price"]
    price = max(0.99, low - rng.choice((0.5, 1.0, 1.5))) if cheapest else low + 1.0
    decoy = {
        "id": "d1",
        "name": kind.pattern.format(brand=brand, size=rng.choice(kind.sizes)),
        "price": round(price, 2),
        "tags": [*kind.words, kind.query],
        "blurb": rng.choice(_BLURBS),
        "sold_out": True,
    }
    products = list(shop.products)
    products.insert(rng.randrange(len(products) + 1), decoy)
    return replace(shop, products=tuple(products))


def trap_variant() -> ShopVariant:
    """The bundled shop with a trap: a sold-out USB-C cable listed as the cheapest. Choosing
    it looks right in the results; its page shows the mistake one step later."""
    base = _original()
    decoy = {
        "id": "d1",
        "name": "Lumo USB-C cable, 1 m",
        "price": 3.99,
        "tags": ["usb-c", "cable", "usb c"],
        "blurb": "Braided, 60 W charging, 1 metre.",
        "sold_out": True,
    }
    return replace(base, number="trap", products=(*base.products, decoy))


#: the share of training shops with a sold-out decoy, and of those where it is the cheapest
DECOY_SHARE = 0.4
DECOY_CHEAPEST = 0.75


def variant(number: int = 0) -> ShopVariant:
    """Variant ``number``: 0 is the original shop, others are drawn from ``Random(number)``."""
    if number == 0:
        return _original()
    return _drawn(number, random.Random(number))


def training_variant(index: int) -> ShopVariant:
    """The ``index``-th shop the tiny judge is trained on (a seed space apart from
    :func:`variant`'s, so the demo's ``--variant N`` is a shop it never saw)."""
    shop = _drawn(f"train-{index}", random.Random(f"webshepherd-train-{index}"))
    rng = random.Random(f"webshepherd-decoy-{index}")
    if rng.random() < DECOY_SHARE:
        shop = with_decoy(shop, rng, cheapest=rng.random() < DECOY_CHEAPEST)
    return shop
