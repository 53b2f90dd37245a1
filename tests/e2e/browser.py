"""Chromium with the built extension for the end-to-end tests: the product's launcher
(webshepherd.daemon.browser.chromium) plus test helpers (a requirement check, a static
server, a Browser)."""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from webshepherd.daemon.browser.chromium import capture, extension_context, wait_extension_ready
from webshepherd.daemon.demo.browser_page import pair_person

from tests.fixtures.data import AXTREE_GOLDEN

REPO = Path(__file__).resolve().parents[2]
DIST = REPO / "extension" / "dist"
GOLDEN = AXTREE_GOLDEN
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
GOLDEN_PORT = 46453  # BrowserGym's goldens carry this port in their URLs


def require_browser() -> None:
    """Fail the calling module, saying what to install, unless Chromium, the built extension
    and Playwright are there (`make test` and `.ci/run` provide all three)."""
    missing = []
    if not Path(CHROMIUM).exists():
        missing.append("chromium is not installed (apt-get install chromium)")
    if not (DIST / "manifest.json").exists():
        missing.append("the extension is not built (cd extension && npm ci && npm run build)")
    try:
        import playwright  # noqa: F401
    except ImportError:
        missing.append("the playwright package is missing (pip install -e '.[dev]')")
    if missing:
        raise RuntimeError("; ".join(missing))


class Browser:
    """A persistent context with the extension loaded, and its service worker."""

    def __init__(self, ctx: Any, worker: Any):
        self.ctx = ctx
        self.worker = worker

    async def configure(
        self, url: str, token: str, flags: str = "default", page_hook: bool = True
    ) -> None:
        """What the options page sets: the daemon URL and the token, and (as an agent's
        launcher does) the page hook on."""
        await self.worker.evaluate(
            "(s) => chrome.storage.local.set(s)",
            {"url": url, "token": token, "flags": flags, "pageHook": page_hook},
        )

    async def conn_state(self) -> str:
        return await self.worker.evaluate("() => self.webshepherd.state().conn")

    async def capture(self, url_prefix: str, flags: str = "default") -> dict[str, Any]:
        return await capture(self.worker, url_prefix, flags)

    async def pair_as_person(self, config_dir: Path) -> None:
        """Pair this browser as a person does: a code as ``webshepherd pair extension`` makes
        it, entered in the options page's "Pair as a person"."""
        await pair_person(self.ctx, self.worker, config_dir)

    async def open_panel(self) -> Any:
        """The extension's side panel page (where a person decides approvals), in a tab."""
        ext_id = self.worker.url.split("/")[2]
        page = await self.ctx.new_page()
        await page.goto(f"chrome-extension://{ext_id}/panel.html", wait_until="load")
        return page


@contextlib.asynccontextmanager
async def open_browser(user_data_dir: Path) -> AsyncIterator[Browser]:
    async with extension_context(user_data_dir, DIST, CHROMIUM) as (ctx, worker):
        await wait_extension_ready(worker)
        yield Browser(ctx, worker)


async def hook_key(daemon: Any, session_id: str | None = None) -> str:
    """A page-hook key from the daemon, as an agent gets one over its own connection:
    for ``session_id``'s page to ``attach``, or (None) for one ``session.start``."""
    agent = await daemon.client(name="hook-agent")
    granted = await agent.request({"type": "hook.grant", "session_id": session_id})
    assert granted["type"] == "hook.granted", granted
    return str(granted["key"])


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve_dir(root: Path, port: int = 0) -> Iterator[str]:
    """A static HTTP server on 127.0.0.1 (port 0: any free port); yields its base URL."""
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def without_inline_text_boxes(text: str) -> str:
    """BrowserGym's text with Chromium's InlineTextBox lines removed (they are leaves)."""
    return "\n".join(
        line for line in text.split("\n") if not line.lstrip("\t").startswith("InlineTextBox ")
    )
