"""Every target a followed tab starts is held from its first request (issue 49): in a paired
person's extension, in `ask` with nobody deciding yet, a `window.open` page posting as it loads,
a `target=_blank` link to another origin, a cross-site frame posting and a service worker
posting reach a loopback recording server only once the person approves (then exactly once).
A `target=_blank` POST form is held, or, when its request left as its tab appeared, blocked
with the reason; a shared worker is refused, with the reason."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.browser import hook_key, require_browser
from tests.e2e.test_golden_capture import hook
from tests.fixtures.poll import until

require_browser()

SHOP = """<!doctype html><html><head><title>Shop</title></head><body>
<form id="f" method="post" action="/orders" target="_blank"><input name="sku" value="8">
<button id="buy">Buy in a new tab</button></form>
<a id="away" href="{other}/elsewhere.html" target="_blank">Elsewhere</a>
<button id="pop" onclick="window.open('/popup.html')">Pop up</button>
<button id="frame" onclick="const f = document.createElement('iframe');
  f.src = '{other}/frame.html'; document.body.append(f)">Pay</button>
<button id="sw" onclick="navigator.serviceWorker.register('/sw.js')">Worker</button>
<output id="out"></output>
<script>function shared() {{ try {{ new SharedWorker('/shared.js'); return 'started'; }}
  catch (e) {{ return e.message; }} }}</script>
</body></html>"""
POST = """fetch('/orders', {method: 'POST', body: 'from=WHO',
  headers: {'Content-Type': 'application/x-www-form-urlencoded'}})"""
POPUP = f"""<!doctype html><html><head><title>Popup</title></head><body>Popup
<script>window.__sent = {POST.replace("WHO", "popup")}
  .then(r => r.status, e => 'failed: ' + e.message);</script></body></html>"""
FRAME = f"<!doctype html><html><body>Pay<script>{POST.replace('WHO', 'frame')}</script></body>"
SCRIPTS = {"/sw.js": POST.replace("WHO", "sw"), "/shared.js": POST.replace("WHO", "shared")}
CARD = "[data-testid=ws-decide][data-reason=commit]"
#: What the page hears (extension/src/child-targets.ts SHARED_WORKERS_BLOCKED).
SHARED_BLOCKED = (
    "webshepherd: shared workers are blocked in a tab whose requests are held (the extension "
    "cannot hold a shared worker's requests before they leave)"
)
Seen = list[tuple[str, str, bytes]]


class Recorder(http.server.BaseHTTPRequestHandler):
    """Serves the pages on two origins (127.0.0.1 and localhost) and records every request."""

    seen: Seen
    other: str

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, body: str, ctype: str = "text/html") -> None:
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.seen.append(("GET", self.path, b""))
        pages = {"/shop.html": SHOP.format(other=self.other), "/popup.html": POPUP}
        if self.path in pages:
            self._answer(pages[self.path])
        elif self.path == "/frame.html":
            self._answer(FRAME)
        elif self.path in SCRIPTS:
            self._answer(SCRIPTS[self.path], "text/javascript")
        else:
            self._answer("ok", "text/plain")

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        self.seen.append(("POST", self.path, self.rfile.read(size)))
        self._answer("ordered", "text/plain")


@contextlib.contextmanager
def recording_server() -> Iterator[tuple[str, Seen]]:
    seen: Seen = []
    handler = type("Handler", (Recorder,), {"seen": seen, "other": ""})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    port = server.server_address[1]
    handler.other = f"http://localhost:{port}"  # another site, the same server
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def shop():
    with recording_server() as s:
        yield s


def posts(seen: Seen) -> list[bytes]:
    return [body for method, path, body in seen if (method, path) == ("POST", "/orders")]


async def start(daemon, browser, base: str):
    page = await browser.ctx.new_page()
    await page.goto(f"{base}/shop.html", wait_until="load")
    key = await hook_key(daemon)
    started = await hook(page, "session.start", intent="Buy a lamp", key=key)
    assert started["type"] == "session.started", started
    return page, await browser.open_panel()


async def barrier(page, base: str) -> None:
    """After this, whatever the browser had let go has arrived (the same server)."""
    assert await page.evaluate("(u) => fetch(u).then(r => r.status)", f"{base}/after") == 200


async def either(*locators) -> bool:
    return any([await locator.count() > 0 for locator in locators])


async def decide(panel, button: str) -> dict[str, str]:
    """The person's answer to the one card waiting (its URL and fields, read first)."""
    card = panel.locator(CARD)
    await card.wait_for(timeout=30_000)
    shown = {
        "url": await card.get_by_test_id("ws-request-url").inner_text(),
        "fields": await card.get_by_test_id("ws-request-fields").inner_text(),
    }
    await card.get_by_role("button", name=button).click()
    await card.wait_for(state="detached", timeout=30_000)
    return shown


async def test_pages_a_followed_tab_opens_are_held_from_their_first_request(paired, shop):
    daemon, browser = paired
    base, seen = shop
    page, panel = await start(daemon, browser, base)
    other = base.replace("127.0.0.1", "localhost")

    # a POST form into a new tab: held when its tab is held in time, else (its request left as
    # the tab appeared) blocked, never sent, and the page that opened the tab says why
    await page.click("#buy")
    notice, card = page.get_by_test_id("ws-refused"), panel.locator(CARD)
    await until(lambda: either(notice, card), what="the form's POST held or refused", interval=0.1)
    if await card.count() > 0:
        shown = await decide(panel, "Reject")
        assert (shown["url"], "sku = 8" in shown["fields"]) == (f"{base}/orders", True), shown
    else:
        said = await notice.inner_text()
        assert f"did not send POST {base}/orders" in said and "into a new tab" in said, said
    # a link to another origin in a new tab: held from its first request
    await page.click("#away")
    assert (await decide(panel, "Reject"))["url"] == f"{other}/elsewhere.html"
    await barrier(page, base)
    assert posts(seen) == [] and ("GET", "/elsewhere.html", b"") not in seen

    # a popup posting as it loads: held until approved, then it arrives exactly once
    async with page.expect_popup() as popped:
        await page.click("#pop")
    popup = await popped.value
    shown = await decide(panel, "Approve")
    assert "from = popup" in shown["fields"], shown
    assert await popup.evaluate("() => window.__sent") == 200
    await barrier(page, base)
    assert posts(seen) == [b"from=popup"]


async def test_a_cross_site_frame_posting_is_held(paired, shop):
    daemon, browser = paired
    base, seen = shop
    page, panel = await start(daemon, browser, base)
    await page.click("#frame")
    card = panel.locator(CARD)
    await card.wait_for(timeout=30_000)
    await barrier(page, base)
    assert posts(seen) == []  # held while nobody has decided
    shown = await decide(panel, "Approve")
    other = base.replace("127.0.0.1", "localhost")
    assert (shown["url"], "from = frame" in shown["fields"]) == (f"{other}/orders", True), shown
    frame = next(f for f in page.frames if f.url.startswith(other))
    await frame.wait_for_load_state("load")
    await barrier(page, base)
    assert posts(seen) == [b"from=frame"]  # exactly once


async def test_a_service_worker_is_held_and_a_shared_worker_refused(paired, shop):
    daemon, browser = paired
    base, seen = shop
    page, panel = await start(daemon, browser, base)
    assert await page.evaluate("() => shared()") == SHARED_BLOCKED
    await page.click("#sw")
    shown = await decide(panel, "Reject")
    assert (shown["url"], "from = sw" in shown["fields"]) == (f"{base}/orders", True), shown
    await barrier(page, base)
    assert posts(seen) == []
    assert ("GET", "/shared.js", b"") not in seen  # the shared worker never started
