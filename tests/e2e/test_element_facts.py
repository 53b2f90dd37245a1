"""What the page says of each target (``observation.elements``) in real Chromium: the
extension's capture (through ``integrations.playwright.page_observation``) gives the same facts
as the demo's text browser on every page of the shop, a checkout's "Place order" submits a POST
form, and the capture reads attributes the page cannot shadow."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright
from webshepherd.daemon.demo.browser import Browser as TextBrowser
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.integrations.playwright import launch, page_observation
from webshepherd.protocol.common import ElementFacts

from tests.e2e.browser import CHROMIUM, require_browser

require_browser()


def _multiset(facts: dict[str, ElementFacts]) -> list[str]:
    return sorted(f.model_dump_json() for f in facts.values())


def _bid(axtree: str, role: str, name: str) -> str:
    m = re.search(rf"\[(\w+)\] {role} {name!r}", axtree)
    assert m, f"no {role} {name!r} in\n{axtree}"
    return m.group(1)


@pytest.fixture(scope="module")
def shop() -> Any:
    with ShopServer() as server:
        yield server


def test_the_extension_and_the_text_browser_read_the_same_facts(
    shop: ShopServer, tmp_path: Path
) -> None:
    with sync_playwright() as pw:
        context = launch(pw, chromium=CHROMIUM, user_data_dir=tmp_path / "profile")
        page = context.new_page()
        seen = []

        def same_facts() -> dict[str, ElementFacts]:
            obs = page_observation(page)
            assert obs.elements, f"no elements on {page.url}"
            text = TextBrowser()
            text.goto(page.url)  # the shop's state is the server's: the same page
            assert _multiset(obs.elements) == _multiset(text.elements()), page.url
            seen.append(page.url)
            return obs.elements

        page.goto(shop.url, wait_until="load")
        home = same_facts()
        search = page_observation(page).axtree
        box = home[_bid(search, "searchbox", "Search products")]
        assert box.submits and box.form_method == "GET"  # Enter submits the search
        page.fill("input[name=q]", "usb-c cable")
        page.click("button[type=submit]")
        page.wait_for_load_state("load")
        same_facts()
        page.click("main a[href^='/product/']")
        page.wait_for_load_state("load")
        product = same_facts()
        add = _bid(page_observation(page).axtree, "button", "Add to cart")
        assert product[add].submits and product[add].form_method == "POST"
        page.click("button[type=submit]")
        page.wait_for_load_state("load")
        root = shop.url.rstrip("/")
        page.goto(f"{root}/cart", wait_until="load")
        same_facts()
        page.goto(f"{root}/checkout", wait_until="load")
        checkout = same_facts()
        tree = page_observation(page).axtree
        place = checkout[_bid(tree, "button", "Place order")]
        assert (place.tag, place.submits, place.form_method) == ("button", True, "POST")
        assert place.form_action == f"{root}/order"
        assert len(seen) == 5
        context.close()


PAGE = """<!doctype html><title>facts</title>
<form action="/pay" method="post">
  <input name="action" value="shadows form.action"><input name="method" value="get">
  <input name="card" data-k="card"><input name="cvc">
  <button type="submit" data-k="pay"><span data-k="pay-text">Pay now</span></button>
  <button type="submit" formmethod="get" formaction="https://other.example/q" data-k="look">
    Look up</button>
  <button type="button" data-k="help">Help</button>
</form>
<form action="/find"><input type="search" name="q" data-k="q"></form>
<a href="/report.csv" download data-k="report">Report</a>
<a href="https://partner.example/"><b data-k="partner">Partner</b></a>
<a data-k="plain">no href</a>
"""


def test_attributes_the_page_cannot_shadow_and_descendants(tmp_path: Path) -> None:
    from tests.e2e.browser import serve_dir

    site = tmp_path / "site"
    site.mkdir()
    (site / "facts.html").write_text(PAGE, "utf-8")
    with serve_dir(site, 0) as base, sync_playwright() as pw:
        context = launch(pw, chromium=CHROMIUM, user_data_dir=tmp_path / "profile")
        page = context.new_page()
        page.goto(f"{base}/facts.html", wait_until="load")
        obs = page_observation(page)
        assert obs.elements is not None
        text = TextBrowser()
        text.goto(f"{base}/facts.html")
        assert _multiset(obs.elements) == _multiset(text.elements())
        facts = {
            page.locator(f'[bid="{bid}"]').evaluate("e => e.dataset.k || e.tagName"): f
            for bid, f in obs.elements.items()
        }
        context.close()
    pay = ElementFacts(tag="button", submits=True, form_method="POST", form_action=f"{base}/pay")
    assert facts["pay"] == pay  # form.action and form.method are shadowed by inputs: not read
    assert facts["pay-text"] == pay.model_copy(update={"tag": "span"})  # inside the button
    assert facts["look"] == ElementFacts(
        tag="button", submits=True, form_method="GET", form_action="https://other.example/q"
    )
    # two text fields and a default button: Enter in a field submits through that button
    assert facts["card"] == pay.model_copy(update={"tag": "input"})
    assert facts["q"] == ElementFacts(
        tag="input", submits=True, form_method="GET", form_action=f"{base}/find"
    )
    assert facts["report"] == ElementFacts(tag="a", href=f"{base}/report.csv", download=True)
    assert facts["partner"] == ElementFacts(tag="b", href="https://partner.example/")
    assert "help" not in facts and "plain" not in facts
