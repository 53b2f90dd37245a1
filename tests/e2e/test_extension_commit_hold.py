"""The browser holds what commits (issue 41): in a tab that follows a session, the paired
extension pauses a request that would commit before it leaves and asks the daemon; a POST
reaches a loopback recording server only once a person approves it in the side panel, never
when the session's mode is 'stop' or the person rejects it; a GET goes unasked. And the
overlay never shows a step scored on another page."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from webshepherd.protocol.modes import loosens

from tests.e2e.browser import hook_key, require_browser
from tests.e2e.test_golden_capture import hook
from tests.fixtures.poll import until

require_browser()

SHOP = """<!doctype html><html><head><title>Shop</title></head><body>
<h1>Desk lamp</h1><button id="add">Add to cart</button><a href="/cart.html">Cart</a>
</body></html>"""
CART = """<!doctype html><html><head><title>Cart</title></head><body>
<h1>Your cart</h1><button id="buy">Place order</button><a href="/shop.html">Back</a>
</body></html>"""
FORM = """<!doctype html><html><head><title>Checkout</title></head><body>
<form id="f" method="post" action="/orders"><input name="sku" value="5"></form>
<button form="f" id="go">Submit</button></body></html>"""
LAMP = """<!doctype html><html><head><title>Lamp</title></head><body>
<h1>Desk lamp</h1><p>Price: $24.99</p><input aria-label="Quantity" name="qty" value="2">
<button id="add">Add to cart</button><p>Order total: $49.98</p></body></html>"""
CHECKLIST = "Checklist 1: Add the lamp to the cart\nChecklist 2: Place the order"
POST_ORDER = """(body) => { window.__order = fetch('/orders', {method: 'POST',
  headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body})
  .then(r => r.status, e => 'failed: ' + e.message); }"""


class Recorder(http.server.BaseHTTPRequestHandler):
    """Serves the two pages and records every request it gets (method, path, body)."""

    seen: list[tuple[str, str, bytes]]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, body: bytes, ctype: str = "text/html") -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.seen.append(("GET", self.path, b""))
        pages = {"/shop.html": SHOP, "/cart.html": CART, "/form.html": FORM, "/lamp.html": LAMP}
        if self.path in pages:
            self._answer(pages[self.path].encode())
        elif self.path == "/report.csv":
            self.send_response(200)
            self.send_header("Content-Type", "text/csv")
            self.send_header("Content-Disposition", 'attachment; filename="report.csv"')
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"a,b\n")
        else:
            self._answer(b'{"ok": true}', "application/json")

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        self.seen.append(("POST", self.path, self.rfile.read(size)))
        self._answer(b"ordered", "text/plain")


@contextlib.contextmanager
def recording_server() -> Iterator[tuple[str, list[tuple[str, str, bytes]]]]:
    seen: list[tuple[str, str, bytes]] = []
    handler = type("Handler", (Recorder,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def shop():
    with recording_server() as s:
        yield s


def posts(seen: list[tuple[str, str, bytes]]) -> list[tuple[str, bytes]]:
    return [(path, body) for method, path, body in seen if method == "POST"]


async def start_session(daemon, browser, base: str):
    page = await browser.ctx.new_page()
    await page.goto(f"{base}/shop.html", wait_until="load")
    key = await hook_key(daemon)
    started = await hook(
        page, "session.start", intent="Buy a desk lamp", checklist=CHECKLIST, key=key
    )
    assert started["type"] == "session.started", started
    return page, key, started["session_id"]


async def set_mode(browser, session_id: str, mode: str):
    """Switches the session's mode in the side panel (its button by wire name); a looser
    mode asks first, and this confirms it."""
    panel = await browser.open_panel()
    row = panel.locator(f"[data-testid=ws-session-mode][data-session-id='{session_id}']")
    await row.wait_for(timeout=30_000)
    old = await row.get_attribute("data-mode") or None
    await row.locator(f"button[data-mode-button='{mode}']").click()
    if loosens(old, mode):  # type: ignore[arg-type]
        await (
            row.locator(f"[data-testid=ws-confirm-mode][data-mode='{mode}']")
            .get_by_test_id("ws-confirm-loosen")
            .click()
        )
    await panel.locator(
        f"[data-testid=ws-session-mode][data-session-id='{session_id}'][data-mode='{mode}']"
    ).wait_for(timeout=30_000)
    return panel


async def test_a_looser_mode_asks_first_naming_the_session_and_a_tighter_one_does_not(paired, shop):
    """Issue 51.4: in the side panel and the popup, ask -> watch and stop -> ask ask first (the
    session by its task and id, what the new mode does); Keep leaves the mode; ask -> stop
    switches at once. The buttons say what each mode does."""
    daemon, browser = paired
    base, _seen = shop
    _page, _key, sid = await start_session(daemon, browser, base)
    panel = await browser.open_panel()
    sel = f"[data-testid=ws-session-mode][data-session-id='{sid}']"
    row = panel.locator(f"{sel}[data-mode=ask]")
    await row.wait_for(timeout=30_000)
    names = [await b.inner_text() for b in await row.locator("button[data-mode-button]").all()]
    assert names == ["ask first", "run and flag", "block writes"]

    await row.locator("button[data-mode-button=watch]").click()
    confirm = row.get_by_test_id("ws-confirm-mode")
    text = " ".join((await confirm.inner_text()).split())
    assert f"“Buy a desk lamp” ({sid})" in text and "from ask first (ask) to run and flag" in text
    assert "writes run without waiting and are only flagged" in text
    await confirm.get_by_test_id("ws-keep-mode").click()
    await confirm.wait_for(state="detached")
    await row.locator("button[data-mode-button=stop]").click()  # tighter: no question
    stopped = panel.locator(f"{sel}[data-mode=stop]")
    await stopped.wait_for(timeout=30_000)
    assert await stopped.get_by_test_id("ws-confirm-mode").count() == 0
    monitor = await daemon.client(role="monitor", name="tui")
    got = await monitor.request({"type": "session.get", "session_id": sid})
    sent = [e["mode"] for e in got["events"] if e["type"] == "mode.set"]
    assert sent == ["stop"]  # Keep sent nothing

    # the popup has the same control: stop -> ask asks there too
    ext_id = browser.worker.url.split("/")[2]
    popup = await browser.ctx.new_page()
    await popup.goto(f"chrome-extension://{ext_id}/popup.html", wait_until="load")
    prow = popup.locator(f"{sel}[data-mode=stop]")
    await prow.wait_for(timeout=30_000)
    await prow.locator("button[data-mode-button=ask]").click()
    pconfirm = prow.get_by_test_id("ws-confirm-mode")
    assert "from block writes (stop) to ask first (ask)" in " ".join(
        (await pconfirm.inner_text()).split()
    )
    await pconfirm.get_by_test_id("ws-confirm-loosen").click()
    await popup.locator(f"{sel}[data-mode=ask]").wait_for(timeout=30_000)
    await panel.locator(f"{sel}[data-mode=ask]").wait_for(timeout=30_000)
    await popup.close()


async def test_stop_mode_refuses_a_post_before_it_leaves_and_a_get_goes_unasked(paired, shop):
    daemon, browser = paired
    base, seen = shop
    page, _key, sid = await start_session(daemon, browser, base)
    # the paired browser's session says it holds its commits (the rules only predict there)
    monitor = await daemon.client(role="monitor", name="tui")
    got = await monitor.request({"type": "session.get", "session_id": sid})
    started = next(e for e in got["events"] if e["type"] == "session.started")
    assert (started["holds"], started["mode"]) == ("browser", "ask")
    panel = await set_mode(browser, sid, "stop")
    assert "block writes (stop)" in await panel.get_by_test_id("ws-modes").inner_text()

    await page.evaluate(POST_ORDER, "sku=42&qty=1")
    result = await page.evaluate("() => window.__order")
    assert str(result).startswith("failed"), result
    assert posts(seen) == []  # it never left the browser
    # the panel says who refused, why and the way out
    decided = panel.locator("[data-testid=ws-decided][data-decider=mode]")
    await decided.wait_for(timeout=30_000)
    text = await decided.inner_text()
    assert f"POST {base}/orders" in text
    assert "refused by the session's mode" in text and "way out:" in text
    assert "by a person" not in text

    # a GET (a safe method, the same origin) is not held
    status = await page.evaluate("() => fetch('/data.json').then(r => r.status)")
    assert status == 200
    assert ("GET", "/data.json", b"") in seen
    assert posts(seen) == []


async def test_stop_mode_refuses_a_form_button_a_download_and_another_origin(paired, shop):
    """What the browser sends decides, not what the element is called: a `form=` button's
    POST, a download and a navigation to another origin are all held."""
    daemon, browser = paired
    base, seen = shop
    page, _key, sid = await start_session(daemon, browser, base)
    await page.goto(f"{base}/form.html", wait_until="load")  # same origin: not held
    assert ("GET", "/form.html", b"") in seen
    panel = await set_mode(browser, sid, "stop")
    await page.click("#go")
    decided = panel.locator("[data-testid=ws-decided][data-decider=mode]")
    await decided.first.wait_for(timeout=30_000)
    assert "POST" in await decided.first.inner_text()
    assert posts(seen) == []
    assert page.url == f"{base}/form.html"  # a refused navigation leaves the page (issue 51)

    downloads: list[object] = []
    page.on("download", lambda d: downloads.append(d))
    with pytest.raises(Exception, match=r"ERR_BLOCKED_BY_CLIENT|ERR_ABORTED"):
        await page.goto(f"{base}/report.csv")
    await until(lambda: _count(decided, 2), what="the download's refusal")
    assert downloads == []

    other = base.replace("127.0.0.1", "localhost")  # another origin, the same server
    with pytest.raises(Exception, match="ERR_ABORTED"):  # not navigated: no error page
        await page.goto(f"{other}/shop.html")
    assert page.url == f"{base}/form.html"
    await until(lambda: _count(decided, 3), what="the navigation's refusal")
    texts = await decided.all_inner_texts()
    assert any(f"GET {other}/shop.html" in t for t in texts), texts
    assert any(f"GET {base}/report.csv" in t for t in texts), texts  # held as a download
    assert posts(seen) == []


async def _count(locator, n: int) -> bool:
    return await locator.count() >= n


async def test_a_post_waits_for_the_person_and_arrives_once_approved(paired, shop):
    daemon, browser = paired
    base, seen = shop
    page, _key, _sid = await start_session(daemon, browser, base)
    await page.evaluate(POST_ORDER, "sku=42&qty=1&note=%E2%80%AEgift")
    panel = await browser.open_panel()
    card = panel.locator("[data-testid=ws-decide][data-reason=commit]")
    await card.wait_for(timeout=30_000)
    # the headline first, then exactly what would be sent
    assert (await card.get_by_test_id("ws-headline").inner_text()).startswith(
        "Waiting for you: this sends a POST to 127.0.0.1"
    )
    assert await card.get_by_test_id("ws-request-method").inner_text() == "POST"
    assert await card.get_by_test_id("ws-request-url").inner_text() == f"{base}/orders"
    fields = await card.get_by_test_id("ws-request-fields").inner_text()
    assert "sku = 42" in fields and "qty = 1" in fields
    assert "note = \\u202egift" in fields  # escaped, never drawn as a control
    assert await card.get_by_test_id("ws-request-origin").inner_text() == base
    # why it waits in the mode's words, the time left, what each answer does (issue 51.2)
    assert "mode is 'ask'" in await card.get_by_test_id("ws-request-why").inner_text()
    left = await card.get_by_test_id("ws-request-left").inner_text()
    assert re.fullmatch(r"\d+:\d\d \(then it is refused\)", left), left
    assert "POST once" in await card.get_by_test_id("ws-request-approve").inner_text()
    assert "Nothing is sent" in await card.get_by_test_id("ws-request-reject").inner_text()
    assert await card.get_by_role("button", name="Edit").count() == 0
    assert posts(seen) == []  # held while the person reads it

    await card.get_by_role("button", name="Approve").click()
    assert await page.evaluate("() => window.__order") == 200
    assert posts(seen) == [("/orders", b"sku=42&qty=1&note=%E2%80%AEgift")]  # exactly once
    decided = panel.locator("[data-testid=ws-decided][data-decider=person]")
    await decided.wait_for(timeout=30_000)
    assert "allowed by a person" in await decided.inner_text()


async def test_a_paused_requests_card_names_the_step_that_caused_it(paired, shop):
    """Issue 51.2: the agent's scored click caused the POST: the side panel's card names the
    button as the page does, with its crop, the field as the page labels it, the page's
    amounts, why it waits, the judge's reward and checklist item, the time left and what each
    answer does."""
    daemon, browser = paired
    base, seen = shop
    page = await browser.ctx.new_page()
    await page.goto(f"{base}/lamp.html", wait_until="load")
    key = await hook_key(daemon)
    started = await hook(
        page, "session.start", intent="Buy two desk lamps", checklist=CHECKLIST, key=key
    )
    assert started["type"] == "session.started", started
    tree = (await browser.capture(f"{base}/lamp.html"))["axtree"]
    add = re.search(r"\[(\w+)\] button 'Add to cart'", tree).group(1)
    cands = [{"thought": "Add two lamps.", "action": f"click('{add}')"}]
    scored = await hook(page, "score", candidates=cands, samples=1, approval="never", key=key)
    assert scored["type"] == "scored", (scored.get("code"), scored.get("message"))
    await page.evaluate(POST_ORDER, "qty=2&sku=5")
    panel = await browser.open_panel()
    card = panel.locator("[data-testid=ws-decide][data-reason=commit]")
    await card.wait_for(timeout=30_000)
    clicked = await card.get_by_test_id("ws-request-clicked").inner_text()
    assert clicked.startswith(f"button “Add to cart” [{add}]"), clicked
    await card.locator("[data-testid=ws-card-crop][data-drawn='1']").wait_for(timeout=10_000)
    fields = await card.get_by_test_id("ws-request-fields").inner_text()
    assert "Quantity (qty) = 2" in fields and "sku = 5" in fields
    amounts = await card.get_by_test_id("ws-request-amounts").inner_text()
    assert "Order total: $49.98" in amounts and "Price: $24.99" in amounts
    judge = await card.get_by_test_id("ws-request-judge").inner_text()
    reward = scored["results"][0]["reward"]
    assert judge.startswith(f"reward {'n/a' if reward is None else f'{reward:.2f}'} at step 1")
    assert "mode is 'ask'" in await card.get_by_test_id("ws-request-why").inner_text()
    await card.get_by_role("button", name="Reject").click()
    await card.wait_for(state="detached", timeout=30_000)
    assert posts(seen) == []


async def test_a_post_the_person_rejects_never_arrives(paired, shop):
    daemon, browser = paired
    base, seen = shop
    page, _key, _sid = await start_session(daemon, browser, base)
    await page.evaluate(POST_ORDER, "sku=7")
    panel = await browser.open_panel()
    card = panel.locator("[data-testid=ws-decide][data-reason=commit]")
    await card.wait_for(timeout=30_000)
    await card.get_by_role("button", name="Reject").click()
    result = await page.evaluate("() => window.__order")
    assert str(result).startswith("failed"), result
    assert posts(seen) == []


async def test_a_site_allowed_from_the_card_asks_first_then_its_writes_run_flagged(paired, shop):
    """Issue 51.4: "Allow this site…" asks in the card, naming the session and the origin;
    "Keep asking" backs out; confirmed, the request goes once and the next POST to that
    origin runs without a card, flagged."""
    daemon, browser = paired
    base, seen = shop
    page, _key, sid = await start_session(daemon, browser, base)
    await page.evaluate(POST_ORDER, "sku=8")
    panel = await browser.open_panel()
    card = panel.locator("[data-testid=ws-decide][data-reason=commit]")
    await card.wait_for(timeout=30_000)
    await card.get_by_test_id("ws-allow-origin").click()
    confirm = card.get_by_test_id("ws-confirm-origin")
    await confirm.wait_for(timeout=10_000)
    said = await confirm.inner_text()
    assert f"allow {base} for the rest of “Buy a desk lamp” ({sid})" in said, said
    await confirm.get_by_test_id("ws-keep-asking").click()
    await confirm.wait_for(state="detached", timeout=10_000)
    assert posts(seen) == []  # still waiting
    await card.get_by_test_id("ws-allow-origin").click()
    await card.get_by_test_id("ws-confirm-allow").click()
    assert await page.evaluate("() => window.__order") == 200
    await page.evaluate(POST_ORDER, "sku=9")  # no card this time
    assert await page.evaluate("() => window.__order") == 200
    assert posts(seen) == [("/orders", b"sku=8"), ("/orders", b"sku=9")]
    flagged = panel.locator("[data-testid=ws-decided][data-outcome=flagged]")
    await flagged.wait_for(timeout=30_000)
    assert f"{base} was allowed for the rest of this session" in await flagged.inner_text()


async def test_watch_mode_runs_the_post_and_flags_it_on_the_overlay(paired, shop):
    daemon, browser = paired
    base, seen = shop
    page, _key, sid = await start_session(daemon, browser, base)
    panel = await set_mode(browser, sid, "watch")
    await page.evaluate(POST_ORDER, "sku=9")
    assert await page.evaluate("() => window.__order") == 200
    assert posts(seen) == [("/orders", b"sku=9")]
    note = page.get_by_test_id("ws-committed")
    await note.wait_for(timeout=30_000)
    assert (
        await note.inner_text() == "committed: POST 127.0.0.1:" + base.rsplit(":", 1)[1] + "/orders"
    )
    # the side panel's "Requests decided" tells it from an approved one, with a time
    flagged = panel.locator("[data-testid=ws-decided][data-outcome=flagged]")
    await flagged.wait_for(timeout=30_000)
    head = await flagged.get_by_test_id("ws-decided-outcome").inner_text()
    assert re.fullmatch(r"Flagged \(ran in watch\) · \d\d:\d\d:\d\d", head), head


async def test_the_overlay_never_shows_a_step_scored_on_another_page(paired, shop):
    daemon, browser = paired
    base, _seen = shop
    page, key, _sid = await start_session(daemon, browser, base)
    shop_tree = (await browser.capture(f"{base}/shop.html"))["axtree"]
    add = re.search(r"\[(\w+)\] button 'Add to cart'", shop_tree).group(1)
    cart = re.search(r"\[(\w+)\] link 'Cart'", shop_tree).group(1)
    cands = [
        {"thought": "Add it.", "action": f"click('{add}')"},
        {"thought": "Look at the cart.", "action": f"click('{cart}')"},
    ]
    scored = await hook(page, "score", candidates=cands, samples=1, approval="never", key=key)
    assert scored["type"] == "scored", (scored.get("code"), scored.get("message"))
    listed = page.get_by_test_id("ws-candidate")
    await listed.first.wait_for()
    # each candidate names its target beside its action
    targets = await page.get_by_test_id("ws-candidate-target").all_inner_texts()
    assert sorted(targets) == ["button “Add to cart”", "link “Cart”"]
    await page.locator(f"[data-testid=ws-outline][data-bid='{add}']").wait_for()

    # the agent opens the cart; its step there waits for a person
    await page.goto(f"{base}/cart.html", wait_until="load")
    cart_tree = (await browser.capture(f"{base}/cart.html"))["axtree"]
    buy = re.search(r"\[(\w+)\] button 'Place order'", cart_tree).group(1)
    pending = hook(
        page,
        "score",
        candidates=[{"thought": "Buy.", "action": f"click('{buy}')"}],
        samples=1,
        approval="always",
        key=key,
    )
    waiting = asyncio.ensure_future(pending)
    await page.get_by_test_id("ws-approval").wait_for(timeout=60_000)
    # nothing of the shop page's step: no candidates list, no badge but the held step's
    assert await page.get_by_test_id("ws-candidates").count() == 0
    outlines = page.locator("[data-testid=ws-outline]")
    bids = {await o.get_attribute("data-bid") for o in await outlines.all()}
    assert bids == {buy}, bids
    badges = await page.get_by_test_id("ws-badge").all_inner_texts()
    assert badges == [f"approve? click('{buy}')"], badges  # no "0.00 ★" left on [bid]
    # let it go
    panel = await browser.open_panel()
    card = panel.locator("[data-testid=ws-decide]")
    await card.wait_for(timeout=30_000)
    await card.get_by_role("button", name="Reject").click()
    await asyncio.wait_for(waiting, 60)


async def test_an_unpaired_browser_holds_nothing(start_daemon, browser, shop):
    """A browser an agent framework launched (not paired): its requests go unasked here (the
    Python gate holds them there)."""
    from webshepherd.daemon.extension_id import EXTENSION_ID

    from tests.e2e.conftest import wait_connected
    from tests.fixtures.daemon import TEST_TOKEN

    daemon = await start_daemon(allowed_extension_ids=(EXTENSION_ID,))
    await browser.configure(daemon.url, TEST_TOKEN)
    await wait_connected(browser)
    base, seen = shop
    page, _key, sid = await start_session(daemon, browser, base)
    monitor = await daemon.client(role="monitor", name="tui")
    got = await monitor.request({"type": "session.get", "session_id": sid})
    started = next(e for e in got["events"] if e["type"] == "session.started")
    assert started.get("holds") is None  # the daemon's rules hold there
    await page.evaluate(POST_ORDER, "sku=1")
    assert await page.evaluate("() => window.__order") == 200

    async def arrived() -> bool:
        return posts(seen) == [("/orders", b"sku=1")]

    await until(arrived, what="the unheld POST")


async def test_a_get_the_operator_names_waits_for_the_person_and_arrives_once_approved(
    start_daemon, browser, shop
):
    """serve --commits (issue 49.4): the followed tab's gate takes the daemon's patterns from
    session.started; a matching fetch GET waits unsent while nobody decides, arrives once
    approved; a matching top-level navigation the person rejects never arrives; other GETs
    go unasked."""
    from webshepherd.daemon.extension_id import EXTENSION_ID

    from tests.e2e.conftest import wait_connected
    from tests.fixtures.daemon import TEST_TOKEN

    base, seen = shop
    daemon = await start_daemon(
        allowed_extension_ids=(EXTENSION_ID,), commits=(f"GET {base}/cart/remove*",)
    )
    await browser.configure(daemon.url, TEST_TOKEN)
    await wait_connected(browser)
    await browser.pair_as_person(daemon.config.config_dir)
    page, _key, _sid = await start_session(daemon, browser, base)

    def gets(path: str) -> int:
        return sum(1 for m, p, _ in seen if m == "GET" and p == path)

    await page.evaluate(
        "() => { window.__remove = fetch('/cart/remove?item=3')"
        ".then(r => r.status, e => 'failed: ' + e.message); }"
    )
    panel = await browser.open_panel()
    card = panel.locator("[data-testid=ws-decide][data-reason=commit]")
    await card.wait_for(timeout=30_000)
    assert "predicted to commit" in await card.get_by_test_id("ws-headline").inner_text()
    assert await card.get_by_test_id("ws-request-method").inner_text() == "GET"
    assert await card.get_by_test_id("ws-request-url").inner_text() == f"{base}/cart/remove?item=3"
    assert await page.evaluate("() => fetch('/cart/view').then(r => r.status)") == 200  # unasked
    await asyncio.sleep(0.5)  # a fixed interval: nobody decides, nothing is sent
    assert gets("/cart/remove?item=3") == 0 and gets("/cart/view") == 1
    await card.get_by_role("button", name="Approve").click()
    assert await page.evaluate("() => window.__remove") == 200
    assert gets("/cart/remove?item=3") == 1  # exactly once

    going = asyncio.ensure_future(page.goto(f"{base}/cart/remove?item=4"))
    card = panel.locator("[data-testid=ws-decide][data-reason=commit]")
    await card.wait_for(timeout=30_000)
    await card.get_by_role("button", name="Reject").click()
    with pytest.raises(Exception, match=r"ERR_BLOCKED_BY_CLIENT|ERR_ABORTED"):
        await going
    await asyncio.sleep(0.5)
    assert gets("/cart/remove?item=4") == 0
