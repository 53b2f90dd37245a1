"""The demo's HTML → AX-tree text converter, on hand-written HTML and on every bundled page."""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from webshepherd.daemon.demo.agent import ShopAgent, elements
from webshepherd.daemon.demo.axtree import html_to_axtree, parse_html, to_axtree
from webshepherd.daemon.demo.browser import Browser
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.variants import training_variant, trap_variant, variant

REPR = r"""(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""  # a Python str repr
LINE = re.compile(rf"^(\t+)(\[\d+\] \S+ {REPR}.*|StaticText {REPR})$")


def test_line_format_names_and_properties() -> None:
    html = """<html><head><title>T's page</title></head><body>
      <nav aria-label="Main"><a href="/">Home</a> <a href="/x">It's <b>bold</b></a></nav>
      <h1>Hello</h1>
      <p>Some <em>text</em> here.</p>
      <form><label for="q">Query</label><input id="q" name="q" type="search" value="abc" required>
        <input type="hidden" name="secret" value="1">
        <input type="checkbox" checked><button>Go</button></form>
      <div><span>loose text</span></div>
    </body></html>"""
    lines = html_to_axtree(html, "http://t/").splitlines()
    assert lines[0] == "RootWebArea \"T's page\", focused, url='http://t/'"
    assert "\t[2] navigation 'Main'" in lines
    assert "\t\t[3] link 'Home'" in lines
    assert "\t[9] form ''" in lines
    assert '\t\t[4] link "It\'s bold"' in lines  # Python repr quoting, as BrowserGym prints
    assert not any(line.strip() == "StaticText 'Home'" for line in lines)  # in its link's name
    assert "\t[6] heading 'Hello'" in lines
    assert "\t\t[11] searchbox 'Query' value='abc', required" in lines
    assert not any("secret" in line or "hidden" in line for line in lines)
    assert "\t\t[13] checkbox '', checked='true'" in lines
    assert "\t\t[14] button 'Go'" in lines
    assert "\tStaticText 'loose text'" in lines  # div/span are generic: not printed, text kept
    for line in lines[1:]:
        assert LINE.match(line), line


def test_typed_values_override_the_html() -> None:
    page = parse_html('<input id="n" type="text" aria-label="Name">', "http://t/")
    bid = next(iter(page.by_bid))
    assert f"[{bid}] textbox 'Name'" in to_axtree(page)
    assert f"[{bid}] textbox 'Name' value='Ada'" in to_axtree(page, {bid: "Ada"})


@pytest.fixture(scope="module")
def shop() -> Iterator[ShopServer]:
    with ShopServer() as server:
        yield server


PATHS = [
    "",
    "search?q=usb-c+cable",
    "search?q=nothing",
    "product/c2",
    "cart",
    "checkout",
    "about",
    "deals",
    "missing",
]


@pytest.mark.parametrize("path", PATHS)
def test_every_bundled_page_converts(shop: ShopServer, path: str) -> None:
    b = Browser()
    b.goto(shop.url + path)
    axtree = b.observe().axtree
    lines = axtree.splitlines()
    assert lines[0].startswith("RootWebArea '") and ", focused, url='http://127.0.0.1:" in lines[0]
    for line in lines[1:]:
        assert LINE.match(line), line
    bids = [e.bid for e in elements(axtree)]
    assert len(bids) == len(set(bids)) > 5
    assert any(e.role == "link" and e.name.startswith("Cart (") for e in elements(axtree))


# -- the shop as Chromium renders it ----------------------------------------------------

#: pages the walks below must have compared (path kinds), so that every shop page is covered
KINDS_SEEN = {
    "home",
    "home typed",
    "search",
    "product",
    "product sold out",
    "cart",
    "cart empty",
    "checkout",
    "checkout typed",
    "checkout express",
    "order",
    "deals",
    "about",
    "not found",
}


def _kind(url: str, tree: str) -> str:
    path = urlsplit(url).path
    if path == "/":
        return "home typed" if "searchbox 'Search products' value=" in tree else "home"
    if path.startswith("/product/"):
        return "product sold out" if "Sold out:" in tree else "product"
    if path == "/cart":
        return "cart empty" if "Your cart is empty." in tree else "cart"
    if path == "/checkout":
        if "radio 'Express ($6.00)', focused, checked='true'" in tree:
            return "checkout express"
        return "checkout typed" if "textbox 'Full name' value=" in tree else "checkout"
    if path.startswith("/order/"):
        return "order"
    if "Page not found" in tree:
        return "not found"
    return path.strip("/")


def test_the_chromium_rendition_is_the_extensions_capture_on_every_shop_page(tmp_path) -> None:
    """The text browser's Chromium rendition (what the tiny judge trains on beside its own
    tree) equals the extension's capture in real Chromium, page for page and action for
    action: walks through shops (the agent's good action mostly, else one of its distractors,
    seeded), plus the pages no walk reaches. Chromium and the text browser act on twin
    servers of the same shop; the twin's address is written as the served one's."""
    from tests.e2e.browser import require_browser

    require_browser()
    asyncio.run(_compare_with_chromium(tmp_path))


async def _compare_with_chromium(tmp_path: Path) -> None:
    from webshepherd.daemon.browser.chromium import (
        DEFAULT_DIST,
        extension_context,
        find_chromium,
        wait_extension_ready,
    )
    from webshepherd.daemon.browser.playwright_env import PlaywrightEnvironment

    chromium = find_chromium()
    assert chromium is not None
    seen: set[str] = set()
    shops = [variant(0), variant(1), trap_variant(), training_variant(3), training_variant(7)]
    with ShopServer() as server, ShopServer() as twin:
        async with extension_context(tmp_path / "profile", DEFAULT_DIST, chromium) as (ctx, w):
            await wait_extension_ready(w)
            page = await ctx.new_page()
            env = PlaywrightEnvironment(page, w, screenshot=False)
            for n, shop in enumerate(shops):
                server.use(shop)
                twin.use(shop)
                served, shown = server.url.rstrip("/"), twin.url.rstrip("/")
                text = Browser(chromium=True)

                pair = (env, text, served, shown)
                for path in ("/deals", "/about", "/no-such-page", "/cart", "/product/none"):
                    await page.goto(served + path)
                    text.goto(shown + path)
                    seen.add(await _same(*pair, path))
                await page.goto(served + "/")
                text.goto(shown + "/")
                agent, rng = ShopAgent(seed=n, shop=shop), random.Random(n)
                for step in range(30):
                    seen.add(await _same(*pair, f"shop {shop.number}, step {step}"))
                    state = await env.observe()
                    proposals = agent.propose(state.url, state.axtree)
                    good = next(p for p in proposals if p.good)
                    run = good if rng.random() < 0.7 else rng.choice(proposals)
                    if run.action.startswith("send_msg_to_user("):
                        break
                    await env.execute(run.action)
                    text.act(run.action)
                else:
                    raise AssertionError(f"shop {shop.number}: no answer in 30 steps")
    assert seen >= KINDS_SEEN, KINDS_SEEN - seen


async def _same(env: Any, text: Browser, served: str, shown: str, where: str) -> str:
    """Chromium's capture equals the text browser's rendition (the twin's address written as
    the served one's); returns the page's kind."""
    got, want = await env.observe(), text.observe()
    tree = want.axtree.replace(shown, served)
    assert (got.url, got.axtree) == (want.url.replace(shown, served), tree), where
    return _kind(got.url, got.axtree)
