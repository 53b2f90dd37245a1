"""E2E fixtures: Chromium with the built extension, paired with a real daemon (tiny model)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from webshepherd.daemon.extension_id import EXTENSION_ID

from tests.e2e.browser import Browser, open_browser
from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.poll import until


@pytest_asyncio.fixture(loop_scope="function")
async def browser(tmp_path: Path) -> AsyncIterator[Browser]:
    async with open_browser(tmp_path / "profile") as b:
        yield b


@pytest_asyncio.fixture(loop_scope="function")
async def paired(start_daemon, browser: Browser):
    """A daemon that allows the extension's origin, and the browser connected to it (URL and
    token set) and paired by a person (a code in its options page): it decides approvals."""
    daemon = await start_daemon(allowed_extension_ids=(EXTENSION_ID,))
    await browser.configure(daemon.url, TEST_TOKEN)
    await wait_connected(browser)
    await browser.pair_as_person(daemon.config.config_dir)
    return daemon, browser


async def wait_connected(browser: Browser, state: str = "connected", timeout: float = 15.0) -> None:
    async def reached() -> bool:
        return await browser.conn_state() == state

    await until(reached, timeout, f"the extension's state {state!r}", interval=0.1)
