"""A WebSocket message waits like a request (issue 49.3): in a tab that follows a session, the
paired extension's page-world wrapper pauses each message a page sends on a WebSocket and asks
the daemon (``commit.check``, method ``WEBSOCKET``); the card shows the socket and the message.
Rejected, nothing reaches the recording socket server and the page's socket closes (4008);
approved, the message arrives exactly once and the server's answer reaches the page."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from websockets.asyncio.server import ServerConnection, serve

from tests.e2e.browser import Browser, hook_key, require_browser
from tests.e2e.test_golden_capture import hook
from tests.fixtures.poll import until

require_browser()

#: The page opens a socket to ``?ws=`` at load; ``#send`` sends an order on it.
PAGE = b"""<!doctype html><html><head><title>Live orders</title></head><body>
<p id="out">opening</p><button id="send">Order</button>
<script>const socket = new WebSocket(new URLSearchParams(location.search).get('ws'));
socket.onopen = () => { out.textContent = 'open'; };
socket.onmessage = (e) => { out.textContent = 'answered ' + e.data; };
socket.onclose = (e) => { out.textContent = 'closed ' + e.code; };
document.getElementById('send').onclick = () => socket.send('order=usb-c cable');</script>
</body></html>"""
CARD = "[data-testid=ws-decide][data-reason=commit]"


class Pages(http.server.BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)


@pytest.fixture
def site() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest_asyncio.fixture(loop_scope="function")
async def sockets() -> AsyncIterator[tuple[str, list[str]]]:
    """A recording WebSocket server: its URL and each message it received."""
    received: list[str] = []

    async def record(connection: ServerConnection) -> None:
        with contextlib.suppress(Exception):
            async for message in connection:
                received.append(str(message))
                await connection.send("ok")

    async with serve(record, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/orders", received


async def follow(daemon: Any, browser: Browser, site: str, ws: str) -> Any:
    page = await browser.ctx.new_page()
    await page.goto(f"{site}/orders.html?ws={ws}", wait_until="load")
    key = await hook_key(daemon)
    started = await hook(page, "session.start", intent="Order a cable", key=key)
    assert started["type"] == "session.started", started
    return page


async def out(page: Any) -> str:
    return str(await page.inner_text("#out"))


@pytest.mark.parametrize("choice", ["Reject", "Approve"])
async def test_a_websocket_message_waits_for_the_person(paired, site, sockets, choice) -> None:
    daemon, browser = paired
    ws, received = sockets
    page = await follow(daemon, browser, site, ws)
    await until(lambda: _is(page, "open"), what="the page's socket open")
    panel = await browser.open_panel()
    card = panel.locator(CARD)
    await page.click("#send")
    await card.wait_for(timeout=30_000)
    headline = await card.get_by_test_id("ws-headline").inner_text()
    assert headline.startswith("Waiting for you: this sends a WEBSOCKET to 127.0.0.1"), headline
    fields = await card.get_by_test_id("ws-request-fields").inner_text()
    assert "message = order=usb-c cable" in fields, fields
    assert received == []  # nothing sent while the person reads it
    await card.get_by_role("button", name=choice).click()
    await card.wait_for(state="detached", timeout=30_000)
    if choice == "Reject":
        await until(lambda: _is(page, "closed 4008"), what="the page's socket closed")
        assert received == []
    else:
        await until(lambda: _is(page, "answered ok"), what="the server's answer")
        assert received == ["order=usb-c cable"]  # exactly once


async def _is(page: Any, text: str) -> bool:
    return await out(page) == text
