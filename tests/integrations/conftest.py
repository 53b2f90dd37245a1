"""Integration fixtures: the bundled shop, a real daemon (tiny model) in the main venv, and
BrowserGym's browsers on Debian's Chromium. These tests run in ``.venv-integrations``
(``make test-integrations``); the root conftest is cut off (``--confcutdir``)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from webshepherd.daemon.demo.shop import ShopServer

from tests.fixtures.venvs import daemon_python

ROOT = Path(__file__).resolve().parents[2]
TEST_TOKEN = "test-token-webshepherd-0123456789"  # tests/fixtures/daemon.py's
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: The Chromium build the driver of playwright 1.44 (BrowserGym's pin) looks for by default.
PLAYWRIGHT_144_CHROMIUM = "chromium-1117"
#: A reference checklist for the sessions: the tiny model writes a parseable checklist of its
#: own only for some pages (how well it does depends on how long it trained on the machine),
#: and a session without one cannot be scored.
CHECKLIST = "Checklist 1: Search the shop for a USB-C cable\nChecklist 2: Open a cable's page"


@dataclass
class Daemon:
    url: str
    token: str
    data_dir: Path
    monitor_code: str  # a one-time pairing code for a monitor (a person's tool)


@pytest.fixture
def shop() -> Iterator[ShopServer]:
    with ShopServer() as server:
        yield server


@contextlib.contextmanager
def daemon_process(base: Path, spec: dict[str, Any] | None = None) -> Iterator[Daemon]:
    """``webshepherd``'s real server run by the main venv's Python (``spec``: a scripted judge
    and config overrides, as tests/integrations/daemon_process.py reads them; None: the tiny
    model with the tests' defaults)."""
    python = daemon_python()
    argv = [python, "-m", "tests.integrations.daemon_process", str(base)]
    proc = subprocess.Popen(
        [*argv, json.dumps(spec)] if spec else argv,
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(30)
        raise RuntimeError(f"the daemon exited ({proc.returncode}) before listening")
    try:
        info = json.loads(line)
        yield Daemon(info["url"], TEST_TOKEN, base / "data", info["monitor_code"])
    finally:
        proc.stdin.close()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    """``webshepherd``'s real server with the tiny model, run by the main venv's Python."""
    with daemon_process(tmp_path / "daemon") as running:
        yield running


@pytest.fixture(autouse=True)
def browsergym_playwright_stopped() -> Iterator[None]:
    """BrowserGym keeps one sync playwright for the process (``browsergym.core._PLAYWRIGHT``);
    left running, its event loop makes every later asyncio test fail ("cannot be called from a
    running event loop"). Stopped after each test; BrowserGym starts a new one when needed."""
    yield
    import browsergym.core

    pw, browsergym.core._PLAYWRIGHT = browsergym.core._PLAYWRIGHT, None
    if pw is not None:
        pw.stop()


@pytest.fixture(scope="session", autouse=True)
def debian_chromium(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every Chromium playwright 1.44 launches is Debian's: BrowserGym's chat window takes no
    executable path, so the driver's default browser path points at Debian's binary."""
    browsers = tmp_path_factory.mktemp("ms-playwright")
    chrome = browsers / PLAYWRIGHT_144_CHROMIUM / "chrome-linux" / "chrome"
    chrome.parent.mkdir(parents=True)
    chrome.symlink_to(os.path.realpath(CHROMIUM))
    os.environ["PLAYWRIGHT_BROWSERS_PATH"] = str(browsers)
    return Path(CHROMIUM)
