"""The capture is BrowserGym's own extraction, on the Chromium this machine has (CI's: the one
``.ci/run`` installs). Both run live, side by side: BrowserGym's ``BrowserEnv`` (its launch, its
marking, its merged AX tree, its flattening) and the extension's capture through
``webshepherd.integrations.playwright``, in a browser each, on the same pages: the fidelity set
(the golden pages and tests/fixtures/data/fidelity/, whose AX trees move between Chromium
releases) and MiniWoB++ tasks as BrowserGym sets them up (same seed, same viewport). The texts
must be equal, default and visible flags, InlineTextBox lines left out as the extension sends.
Goldens fix one Chromium's output; this compares on whichever is installed."""

from __future__ import annotations

import contextlib
import functools
import http.server
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from browsergym.core import _get_global_playwright
from browsergym.core.env import BrowserEnv
from browsergym.core.task import OpenEndedTask
from browsergym.utils.obs import flatten_axtree_to_str
from webshepherd.integrations.browsergym import OBSERVATION_IGNORED_ROLES
from webshepherd.integrations.playwright import launch, page_observation

from tests.fixtures.data import AXTREE_GOLDEN, FIDELITY
from tests.integrations.conftest import CHROMIUM

miniwob = pytest.importorskip("miniwob")
pytest.importorskip("browsergym.miniwob")

PAGES = {
    **{name: AXTREE_GOLDEN for name in ("p1-form", "p2-shop", "p3-quotes", "p4-iframe")},
    **{path.stem: FIDELITY for path in sorted(FIDELITY.glob("*.html"))},
}
#: MiniWoB++ tasks: the date and time inputs (their picker buttons), a jQuery date picker,
#: a slider, and kinds of page the scripted agents of tests/integrations/test_miniwob.py run
MINIWOB_TASKS = (
    "enter-date", "enter-time", "choose-date", "use-slider", "click-checkboxes", "login-user",
    "click-tab", "email-inbox",
)  # fmt: skip
SEED = 7
MINIWOB_PAGES = Path(miniwob.__file__).parent / "html"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve(root: Path) -> Iterator[str]:
    """``root`` over HTTP on loopback (the extension reads no file:// page)."""
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def texts(obs: dict[str, Any]) -> dict[str, str]:
    """BrowserGym's flattening of its own observation, with both flag sets."""
    tree, extra = obs["axtree_object"], obs["extra_element_properties"]
    return {
        "default": flatten_axtree_to_str(tree, ignored_roles=OBSERVATION_IGNORED_ROLES),
        "visible": flatten_axtree_to_str(
            tree,
            extra_properties=extra,
            with_visible=True,
            with_clickable=True,
            ignored_roles=OBSERVATION_IGNORED_ROLES,
        ),
    }


def browsergym_texts(env: BrowserEnv) -> tuple[dict[str, str], Any]:
    """BrowserGym's observation of the env's first page, and its task (set up on it)."""
    try:
        obs, _ = env.reset(seed=SEED)
        return texts(obs), env.task
    finally:
        env.close()


def captured(context: Any, viewport: dict[str, int], setup: Any) -> dict[str, str]:
    page = context.new_page()
    try:
        page.set_viewport_size(viewport)
        setup(page)
        return {
            flags: page_observation(page, flags=flags).axtree for flags in ("default", "visible")
        }
    finally:
        page.close()


def differences(want: dict[str, str], got: dict[str, str]) -> list[str]:
    found = []
    for flags in ("default", "visible"):
        if got[flags] != want[flags]:
            lines = zip(want[flags].split("\n"), got[flags].split("\n"), strict=False)
            first = next(((w, g) for w, g in lines if w != g), ("(end)", "(end)"))
            found.append(f"{flags}: BrowserGym {first[0]!r}, capture {first[1]!r}")
    return found


@contextlib.contextmanager
def extension_context() -> Iterator[Any]:
    """One Chromium with the extension, driven by BrowserGym's sync Playwright (one per
    process; tests/integrations/conftest.py stops it after each test)."""
    context = launch(_get_global_playwright(), chromium=CHROMIUM)
    try:
        yield context
    finally:
        context.close()


def test_chromium_is_the_one_installed() -> None:
    version = subprocess.run(
        [CHROMIUM, "--version"], capture_output=True, text=True, check=True
    ).stdout
    print(f"fidelity checked on {version.strip()}")
    assert "Chromium" in version


@pytest.mark.timeout(600)  # a browser per page for BrowserGym (2.5 min on a loaded 2-core box)
def test_the_fidelity_set_is_captured_as_browsergym_extracts_it() -> None:
    found, seen = [], {}
    with extension_context() as context:
        for name, folder in PAGES.items():
            with serve(folder) as base:
                url = f"{base}/{name}.html"
                env = BrowserEnv(
                    task_entrypoint=OpenEndedTask,
                    task_kwargs={"start_url": url},
                    headless=True,
                    pw_chromium_kwargs={"executable_path": CHROMIUM},
                )
                want, task = browsergym_texts(env)
                got = captured(
                    context, task.viewport, lambda page, url=url: page.goto(url, wait_until="load")
                )
            found += [f"{name} {d}" for d in differences(want, got)]
            seen[name] = want["default"]
    assert not found, "\n".join(found)
    # the set still holds what moves between Chromium releases
    assert re.search(r"\] button 'Show date picker", seen["dates"]), seen["dates"]
    assert re.search(r"\] progressbar 'Sync' value=42.*valuetext=", seen["widgets"])


@pytest.mark.timeout(600)
def test_miniwob_pages_are_captured_as_browsergym_extracts_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import browsergym.miniwob  # noqa: F401  (registers the browsergym/miniwob.* ids)

    found, seen = [], {}
    with serve(MINIWOB_PAGES) as base, extension_context() as context:
        monkeypatch.setenv("MINIWOB_URL", f"{base}/miniwob/")
        for task in MINIWOB_TASKS:
            env = gym.make(
                f"browsergym/miniwob.{task}",
                headless=True,
                pw_chromium_kwargs={"executable_path": CHROMIUM},
            ).unwrapped
            want, done = browsergym_texts(env)
            # the same task and seed, set up by BrowserGym's own code on the extension's page
            again = type(done)(seed=SEED)
            got = captured(context, again.viewport, again.setup)
            found += [f"{task} {d}" for d in differences(want, got)]
            seen[task] = want["default"]
    assert not found, "\n".join(found)
    assert "] Date " in seen["enter-date"] and "] InputTime " in seen["enter-time"]
