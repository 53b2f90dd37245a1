"""Chromium with the built extension loaded, through Playwright (a system Chromium binary,
no ``playwright install``). Used by ``webshepherd observe`` and by the end-to-end tests."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

DEFAULT_DIST = Path(__file__).resolve().parents[2] / "extension" / "dist"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--silent-debugger-extension-api",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: Resolves once the extension's service worker has set up ``self.webshepherd``.
WAIT_READY = (
    "() => new Promise(r => { const t = () => self.webshepherd ? r(1) : setTimeout(t, 20); t(); })"
)
#: The extension's capture of the one tab showing exactly ``url`` (``{tabs: n}`` when n != 1).
CAPTURE_EXACT = """async ([url, flags]) => {
  const tabs = (await chrome.tabs.query({})).filter(t => t.url === url);
  return tabs.length === 1 ? self.webshepherd.captureTab(tabs[0].id, flags) : {tabs: tabs.length};
}"""


def find_chromium() -> str | None:
    """The system Chromium on PATH (Debian's ``chromium``, else ``chromium-browser``)."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def launch_args(dist: Path) -> list[str]:
    """Chromium's command-line flags, with only the extension in ``dist`` loaded."""
    return [*CHROMIUM_ARGS, f"--disable-extensions-except={dist}", f"--load-extension={dist}"]


@contextlib.asynccontextmanager
async def extension_context(
    user_data_dir: str | Path, dist: Path, chromium: str, headless: bool = True
) -> AsyncIterator[tuple[Any, Any]]:
    """A persistent context with the extension (headless unless told), and its service worker."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        ctx = await pw.chromium.launch_persistent_context(
            str(user_data_dir),
            executable_path=chromium,
            headless=headless,
            args=launch_args(dist),
            viewport={"width": 1280, "height": 720},
        )
        try:
            worker = ctx.service_workers[0] if ctx.service_workers else None
            if worker is None:
                worker = await ctx.wait_for_event("serviceworker", timeout=15_000)
            yield ctx, worker
        finally:
            await ctx.close()


async def wait_extension_ready(worker: Any) -> None:
    """Wait until the service worker has set up ``self.webshepherd``."""
    await worker.evaluate(WAIT_READY)


async def capture(worker: Any, url_prefix: str, flags: str = "default") -> dict[str, Any]:
    """The extension's capture of the tab whose URL starts with ``url_prefix``."""
    return await worker.evaluate(
        "([u, f]) => self.webshepherd.captureUrl(u, f)", [url_prefix, flags]
    )
