"""The text browser's element facts from HTML (the extension's rules; tests/e2e/
test_element_facts.py holds the two to the same facts in real Chromium)."""

from __future__ import annotations

from webshepherd.daemon.demo.axtree import parse_html
from webshepherd.daemon.demo.element_facts import element_facts
from webshepherd.protocol.common import ElementFacts

BASE = "http://shop.test/page"
PAGE = """<form action="/pay" method="POST">
  <input name="action"><input name="card" id="card">
  <button id="pay"><span id="pay-text">Pay</span></button>
  <button type="submit" formmethod="dialog" id="close">Close</button>
  <button type="submit" formmethod="bogus" formaction="https://x.test/q" id="look">Look</button>
  <button type="reset" id="reset">Reset</button>
</form>
<form action="/find"><input type="search" id="q"><input type="checkbox" id="box"></form>
<form><input id="a"><input id="b"></form>
<a href="#" id="top">Top</a><a href="/r.zip" download id="zip">Zip</a><a id="nohref">x</a>
"""


def _by_id() -> dict[str, ElementFacts]:
    page = parse_html(PAGE, BASE)
    facts = element_facts(page)
    return {page.by_bid[bid].attrs.get("id", page.by_bid[bid].tag): f for bid, f in facts.items()}


def test_submitters_fields_links_and_what_they_contain() -> None:
    f = _by_id()
    pay = ElementFacts(
        tag="button", submits=True, form_method="POST", form_action="http://shop.test/pay"
    )
    assert f["pay"] == pay
    assert f["pay-text"] == pay.model_copy(update={"tag": "span"})
    assert f["card"] == pay.model_copy(update={"tag": "input"})  # Enter: the default button
    assert f["close"].form_method == "DIALOG"
    assert (f["look"].form_method, f["look"].form_action) == ("GET", "https://x.test/q")
    assert f["q"] == ElementFacts(
        tag="input", submits=True, form_method="GET", form_action="http://shop.test/find"
    )
    assert f["top"] == ElementFacts(tag="a", href="http://shop.test/page#")
    assert f["zip"] == ElementFacts(tag="a", href="http://shop.test/r.zip", download=True)


def test_what_submits_nothing_has_no_facts() -> None:
    f = _by_id()
    # a reset button, a checkbox, a link without href, and two text fields of a form without a
    # submit button (Enter submits nothing)
    assert {"reset", "box", "nohref", "a", "b"}.isdisjoint(f)
