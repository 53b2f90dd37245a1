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


# A page that lies to a capture running in its main world (issue 41): DOM prototypes and form
# getters overridden, and controls tied to their form by HTML's association, not by nesting.
HOSTILE = """<!doctype html><title>hostile</title>
<script>
  const ga = Element.prototype.getAttribute, ha = Element.prototype.hasAttribute;
  Element.prototype.closest = function () { return null; };
  Element.prototype.getAttribute = function (n) {
    if (n === 'method' || n === 'formmethod') return 'get';
    if (n === 'href') return '/safe';
    return ga.call(this, n);
  };
  Element.prototype.hasAttribute = function (n) {
    return n === 'download' || n === 'formmethod' ? false : ha.call(this, n);
  };
  for (const C of [HTMLButtonElement, HTMLInputElement])
    Object.defineProperty(C.prototype, 'form', {get() { return null; }});
  Object.defineProperty(HTMLFormElement.prototype, 'method', {get() { return 'get'; }});
  Object.defineProperty(HTMLFormElement.prototype, 'elements', {get() { return []; }});
  Object.defineProperty(HTMLLabelElement.prototype, 'control', {get() { return null; }});
</script>
<form id="pay" action="/pay" method="post">
  <input name="card" data-k="card"><input name="cvc">
  <button data-k="inside">Pay</button>
</form>
<button form="pay" data-k="outside">Pay from outside</button>
<input type="submit" form="pay" value="Order" data-k="outside-input">
<label for="far" data-k="label">Confirm</label>
<button form="pay" id="far" formmethod="post" formaction="/confirm">Far away</button>
<form action="/find"><input name="q" form="pay" data-k="owned-elsewhere"></form>
<form action="/keep" method="post"><button form="nope" data-k="orphan">Orphan</button></form>
<form action="/one"><input name="only" data-k="only"></form>
<a href="https://evil.test/" data-k="link">Link</a>
<a href="/f.zip" download data-k="dl">Download</a>
<map name="m"><area href="https://evil.test/area" shape="rect" coords="0,0,9,9" data-k="area"></map>
<img usemap="#m" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="10" height="10">
"""


def test_html_form_association_read_where_the_page_cannot_lie(tmp_path: Path) -> None:
    from tests.e2e.browser import serve_dir

    site = tmp_path / "site"
    site.mkdir()
    (site / "hostile.html").write_text(HOSTILE, "utf-8")
    with serve_dir(site, 0) as base, sync_playwright() as pw:
        context = launch(pw, chromium=CHROMIUM, user_data_dir=tmp_path / "profile")
        page = context.new_page()
        page.goto(f"{base}/hostile.html", wait_until="load")
        obs = page_observation(page)
        assert obs.elements is not None
        keys = page.evaluate(
            "() => Object.fromEntries([...document.querySelectorAll('[data-k]')]"
            ".map((e) => [e.dataset.k, ga.call(e, 'bid')]))"
        )
        context.close()
    facts = {k: obs.elements.get(bid) for k, bid in keys.items() if bid is not None}
    pay = ElementFacts(tag="button", submits=True, form_method="POST", form_action=f"{base}/pay")
    assert facts["inside"] == pay  # the lying getAttribute('method') is not the capture's
    assert facts["outside"] == pay  # form= ties it to the POST form
    assert facts["outside-input"] == pay.model_copy(update={"tag": "input"})
    assert facts["card"] == pay.model_copy(update={"tag": "input"})  # Enter: default button
    assert facts["owned-elsewhere"] == pay.model_copy(update={"tag": "input"})  # its owner: pay
    # a click on the label clicks its control, a POST with its own formaction
    assert facts["label"] == ElementFacts(
        tag="label", submits=True, form_method="POST", form_action=f"{base}/confirm"
    )
    assert facts["orphan"] is None  # form= names no form: it submits nothing
    assert facts["only"] == ElementFacts(
        tag="input", submits=True, form_method="GET", form_action=f"{base}/one"
    )
    assert facts["link"] == ElementFacts(tag="a", href="https://evil.test/")
    assert facts["dl"] == ElementFacts(tag="a", href=f"{base}/f.zip", download=True)
    assert facts["area"] == ElementFacts(tag="area", href="https://evil.test/area")
