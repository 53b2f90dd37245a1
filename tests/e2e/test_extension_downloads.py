"""Downloads of every kind wait before the file is saved (issue 49): in a tab that follows a
session, a paired person's extension holds a `.zip` link served without Content-Disposition,
`<a download>` of a text file, a `data:` and a `blob:` download; the card shows the file's
name, type and size and the page it came from; nothing is saved unless the person approves.

The browser downloads as a person's does: Playwright's own download handling (which takes the
browser's downloads over, bypassing extensions) is switched back to Chromium's default."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.e2e.browser import Browser, hook_key, open_browser, require_browser
from tests.e2e.test_golden_capture import hook
from tests.fixtures.poll import until

require_browser()

PAGE = b"""<!doctype html><html><head><title>Files</title></head><body>
<a id="txt" href="/notes.txt" download>Notes</a> <a id="zip" href="/archive.zip">Archive</a>
<button id="data" onclick="save('data:text/plain,hello%20data', 'hello.txt')">Data</button>
<button id="blob" onclick="save(blobUrl(), 'rows.csv')">Blob</button>
<script>const blobUrl = () => URL.createObjectURL(new Blob(['a,b\\n1,2\\n'], {type: 'text/csv'}));
function save(href, name) { const a = document.createElement('a'); a.href = href;
  a.download = name; document.body.append(a); a.click(); }</script>
</body></html>"""
FILES = {
    "/files.html": ("text/html", PAGE),
    "/notes.txt": ("text/plain", b"plain text"),
    "/archive.zip": ("application/zip", b"PK\x03\x04 a zip"),
}
CARD = "[data-testid=ws-decide][data-reason=commit]"


class Recorder(http.server.BaseHTTPRequestHandler):
    """Serves FILES (no Content-Disposition) and records every request's path."""

    seen: list[str]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append(self.path)
        ctype, body = FILES.get(self.path, ("application/json", b"{}"))
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextlib.contextmanager
def recording_server() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), type("Handler", (Recorder,), {"seen": seen})
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def files():
    with recording_server() as s:
        yield s


@pytest.fixture
def saved_to(tmp_path: Path) -> Path:
    folder = tmp_path / "downloads"
    folder.mkdir()
    return folder


@pytest_asyncio.fixture(loop_scope="function")
async def browser(tmp_path: Path, saved_to: Path) -> AsyncIterator[Browser]:
    """The extension's browser, saving downloads into ``saved_to`` as a person's does."""
    prefs = tmp_path / "profile" / "Default" / "Preferences"
    prefs.parent.mkdir(parents=True)
    # several downloads from one page go without a prompt (the automatic-downloads setting)
    settings = {"default_content_setting_values": {"automatic_downloads": 1}}
    download = {"default_directory": str(saved_to), "prompt_for_download": False}
    prefs.write_text(json.dumps({"download": download, "profile": settings}))
    async with open_browser(tmp_path / "profile") as b:
        yield b


async def start(daemon, browser: Browser, base: str):
    page = await browser.ctx.new_page()
    await page.goto(f"{base}/files.html", wait_until="load")
    cdp = await browser.ctx.new_cdp_session(page)
    await cdp.send("Browser.setDownloadBehavior", {"behavior": "default"})  # a person's browser
    key = await hook_key(daemon)
    started = await hook(page, "session.start", intent="Keep the files", key=key)
    assert started["type"] == "session.started", started
    return page


async def downloads(browser: Browser) -> list[dict[str, Any]]:
    return await browser.worker.evaluate("() => chrome.downloads.search({})")


async def ended(browser: Browser, n: int) -> bool:
    got = await downloads(browser)
    return len(got) >= n and all(d["state"] != "in_progress" for d in got)


async def card_rows(card) -> dict[str, str]:
    return {
        "headline": await card.get_by_test_id("ws-headline").inner_text(),
        "fields": await card.get_by_test_id("ws-request-fields").inner_text(),
        "page": await card.get_by_test_id("ws-request-page").inner_text(),
    }


async def test_downloads_of_every_kind_wait_and_a_rejected_one_is_never_saved(
    paired, files, saved_to
):
    daemon, browser = paired
    base, _seen = files
    page = await start(daemon, browser, base)
    panel = await browser.open_panel()
    card = panel.locator(CARD)
    cases = [
        ("#txt", "notes.txt", "text/plain", "10 bytes", f"{base}/notes.txt"),
        ("#data", "hello.txt", "text/plain", "10 bytes", "data:text/plain,hello%20data"),
        ("#blob", "rows.csv", "text/csv", "", "blob:"),
    ]
    for n, (button, name, mime, size, url) in enumerate(cases, start=1):
        await page.click(button)
        await card.wait_for(timeout=30_000)
        rows = await card_rows(card)
        assert rows["headline"].startswith("Waiting for you: this downloads"), rows
        assert f"file = {name}" in rows["fields"] and f"type = {mime}" in rows["fields"], rows
        assert f"size = {size}" in rows["fields"], rows
        assert rows["page"] == f"{base}/files.html"
        assert (await card.get_by_test_id("ws-request-url").inner_text()).startswith(url)
        assert list(saved_to.iterdir()) == []  # nothing saved while the person reads it
        await card.get_by_role("button", name="Reject").click()
        await card.wait_for(state="detached", timeout=30_000)
        await until(lambda n=n: ended(browser, n), what=f"download {n} to end")
        assert list(saved_to.iterdir()) == []
    got = await downloads(browser)
    assert [(d["state"], d.get("error")) for d in got] == [("interrupted", "USER_CANCELED")] * 3


async def test_a_zip_link_without_content_disposition_is_saved_once_approved(
    paired, files, saved_to
):
    daemon, browser = paired
    base, seen = files
    page = await start(daemon, browser, base)
    panel = await browser.open_panel()
    card = panel.locator(CARD)
    await page.click("#zip")
    await card.wait_for(timeout=30_000)
    rows = await card_rows(card)
    assert "file = archive.zip" in rows["fields"] and "type = application/zip" in rows["fields"]
    assert list(saved_to.iterdir()) == []
    await card.get_by_role("button", name="Approve").click()
    await until(lambda: ended(browser, 1), what="the download to end")
    [done] = await downloads(browser)
    assert done["state"] == "complete", done
    assert [p.name for p in saved_to.iterdir()] == ["archive.zip"]
    assert (saved_to / "archive.zip").read_bytes() == FILES["/archive.zip"][1]
    assert seen.count("/archive.zip") == 1  # fetched once
