"""Synthetic examples for the tiny test model: the real prompts with short made-up pages.

Each example is the chat messages of a real template (checklist or judge) and the answer in
the published model's output format. Nothing is known about these made-up pages, so their
judgements say so (every item No); they teach the format. What the tiny judge knows comes from
the bundled shop's episodes (:mod:`webshepherd.daemon.demo.episodes`), labelled by the shop.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from webshepherd.daemon.engine.prompts import checklist_messages, format_trajectory, judge_messages
from webshepherd.protocol.common import Turn

_ITEMS = [
    "red shoes",
    "a blue lamp",
    "coffee beans",
    "a laptop bag",
    "green tea",
    "a desk chair",
    "wool socks",
    "a phone case",
    "a yoga mat",
    "headphones",
    "a water bottle",
    "a road bike",
]
_PLACES = [
    "Pittsburgh",
    "the museum",
    "Carnegie Mellon",
    "the airport",
    "Lake Tahoe",
    "the city hall",
]
_SITES = [
    "http://shop.example.com",
    "http://maps.example.com",
    "http://forum.example.com",
    "http://wiki.example.com",
]
_INTENTS = [
    "Buy {item} for under $50",
    "Add {item} to my wish list",
    "Find the cheapest {item}",
    "Show the directions to {place}",
    "Post a review of {item}",
    "Find the opening hours of {place}",
    "Compare the prices of {item}",
    "Open the page about {place}",
]
_ROLES = [
    ("link", "Home"),
    ("textbox", "Search"),
    ("button", "Search"),
    ("link", "Cart"),
    ("heading", "Results"),
    ("link", "{item}"),
    ("button", "Add to Cart"),
    ("StaticText", "Price: $42"),
    ("combobox", "Sort by"),
    ("link", "{place}"),
    ("button", "Directions"),
    ("checkbox", "In stock"),
]
_STEPS = [
    ("Search for the item", "Type the item into the search box and submit."),
    ("Open the product page", "Click the link of the matching product."),
    ("Add the item to the cart", "Press the Add to Cart button."),
    ("Check the price", "Read the price and confirm it is under the limit."),
    ("Find the place", "Locate the place in the search results."),
    ("Submit the form", "Press the submit button to finish."),
]
_THOUGHTS = [
    "I should search for {item} first.",
    "The product page is open, I will add it to the cart.",
    "I need to find {place} on this page.",
    "The results are shown, I will open the first one.",
    "I will sort the results by price.",
    "The form is ready, so I submit it.",
]
_ACTIONS = [
    "fill('{bid}', '{item}')",
    "click('{bid}')",
    "press('{bid}', 'Enter')",
    "scroll(0, 300)",
    "select_option('{bid}', 'Price')",
    "goto('{site}')",
]
_FEEDBACK = [
    "The agent searched for the right item, which moves the task forward.",
    "The agent clicked an unrelated link, so the action does not help the task.",
    "The agent is on the right page but has not finished the current subgoal.",
    "The agent repeats a previous step and makes no new progress.",
]
_ANALYSIS = [
    "The user needs to search for the item, open the result, and finish the task.",
    "The task requires finding the right page and completing the action on it.",
]


@dataclass(frozen=True)
class Example:
    messages: list[dict[str, str]]
    answer: str
    image: bytes | None = None  # the screenshot (PNG) the messages' image placeholder stands for


def _fill(rng: random.Random, text: str) -> str:
    return (
        text.replace("{item}", rng.choice(_ITEMS))
        .replace("{place}", rng.choice(_PLACES))
        .replace("{bid}", str(rng.randint(10, 300)))
        .replace("{site}", rng.choice(_SITES))
    )


def axtree(rng: random.Random, lines: int) -> str:
    """A small BrowserGym-like accessibility tree."""
    out = [f"RootWebArea '{rng.choice(['Shop', 'Maps', 'Forum', 'Wiki'])}', focused"]
    for _ in range(lines):
        role, name = rng.choice(_ROLES)
        out.append(f"\t[{rng.randint(10, 300)}] {role} '{_fill(rng, name)}'")
    return "\n".join(out)


def checklist_text(rng: random.Random, n: int) -> str:
    """``Checklist N: title`` / ``- Goal: …`` lines, as the model writes them."""
    steps = rng.sample(_STEPS, min(n, len(_STEPS)))
    return "\n".join(
        f"Checklist {i}: {_fill(rng, t)}\n- Goal: {_fill(rng, g)}"
        for i, (t, g) in enumerate(steps, 1)
    )


def checklist_example(rng: random.Random, n: int | None = None) -> Example:
    """A checklist prompt for a made-up task and, as answer, its made-up checklist (``n``
    items, 1-5 when None): these rows teach the format only."""
    from webshepherd.daemon.offline.training.targets import checklist_target

    n = n if n is not None else rng.randint(1, 5)
    intent = _fill(rng, rng.choice(_INTENTS))
    msgs = checklist_messages(intent, rng.choice(_SITES), axtree(rng, rng.randint(2, 5)))
    text = checklist_text(rng, n)
    titles = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("Check")]
    return Example(msgs, checklist_target(text, titles))


def judge_example(rng: random.Random, with_image: bool = False, n: int | None = None) -> Example:
    """A judge prompt for a made-up page (``n`` checklist items, 1-5 when None) and, as answer,
    what the rubric asks when nothing shows progress: every item No (``with_image``: the
    multimodal variant and its screenshot). Nothing is known about these pages, so no other
    label would be true; these rows teach the format (one label per item) only."""
    from webshepherd.daemon.offline.training.targets import NO_EVIDENCE, judge_target

    n = n if n is not None else rng.randint(1, 5)
    history = tuple(
        Turn(_fill(rng, rng.choice(_THOUGHTS)), _fill(rng, rng.choice(_ACTIONS)))
        for _ in range(rng.randint(0, 2))
    )
    tree = axtree(rng, rng.randint(2, 5))
    thought, action = _fill(rng, rng.choice(_THOUGHTS)), _fill(rng, rng.choice(_ACTIONS))
    msgs = judge_messages(
        _fill(rng, rng.choice(_INTENTS)),
        format_trajectory(history),
        rng.choice(_SITES),
        tree,
        checklist_text(rng, n),
        thought,
        action,
        with_image=with_image,
    )
    answer = judge_target(["no"] * n, NO_EVIDENCE)
    if not with_image:
        return Example(msgs, answer)
    from webshepherd.daemon.dev.screenshots import axtree_png

    return Example(msgs, answer, axtree_png(tree))


def example(rng: random.Random) -> Example:
    return judge_example(rng) if rng.random() < 0.7 else checklist_example(rng)
