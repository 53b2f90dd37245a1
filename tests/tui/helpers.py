"""Helpers for the TUI tests: a fixed device probe, the screen as text, waiting on a condition."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from textual.app import App
from textual.pilot import Pilot
from webshepherd.tui.device import DeviceReading
from webshepherd.tui.state import MonitorState

from tests.fixtures.poll import TIMEOUT, until
from tests.tui.events import load_recorded

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("WEBSHEPHERD_UPDATE_SNAPSHOTS") == "1"


class FixedProbe:
    """The same CPU/RAM reading every time (snapshots must not depend on this machine)."""

    def read(self) -> DeviceReading:
        return DeviceReading(
            cpu_percent=12.0, cpus=16, ram_used_mb=8192.0, ram_total_mb=65536.0, source="fixed"
        )


def recorded_state() -> MonitorState:
    state = MonitorState()
    for event in load_recorded():
        state.fold_raw(event)
    return state


def screen_text(app: App[object]) -> str:
    """What the terminal shows, as plain text (one line per row, trailing blanks kept)."""
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    return console.export_text(styles=False)


def assert_snapshot(app: App[object], name: str) -> None:
    """Compare the screen with ``snapshots/<name>.txt``; WEBSHEPHERD_UPDATE_SNAPSHOTS=1 rewrites."""
    text = screen_text(app)
    path = SNAPSHOTS / f"{name}.txt"
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no snapshot {path.name}: run with WEBSHEPHERD_UPDATE_SNAPSHOTS=1"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"{name} differs from its snapshot:\n{text}"


async def settled_snapshot(pilot: Pilot[object], app: App[object], name: str) -> None:
    """:func:`assert_snapshot` once the screen shows it (frames land late under load)."""
    path = SNAPSHOTS / f"{name}.txt"
    if UPDATE or not path.exists():
        await pilot.pause(0.2)  # rewriting by hand: nothing to wait for, so let it settle
    else:
        expected = path.read_text(encoding="utf-8")
        with contextlib.suppress(AssertionError):  # assert_snapshot says how it differs
            await wait_until(pilot, lambda: screen_text(app) == expected, what=name)
    assert_snapshot(app, name)


async def wait_until(
    pilot: Pilot[object],
    cond: Callable[[], object],
    timeout: float = TIMEOUT,
    what: str = "",
    observe: Callable[[], object] | None = None,
) -> None:
    """Let the app run until ``cond()`` is true (the app's timers and workers keep going)."""
    await until(cond, timeout, what, pause=pilot.pause, observe=observe)


async def wait_for_text(pilot: Pilot[object], app: App[object], *texts: str) -> None:
    """Let the app run until the screen shows every one of ``texts``."""
    await wait_until(
        pilot,
        lambda: all(t in screen_text(app) for t in texts),
        what=f"the screen to show {texts}",
        observe=lambda: screen_text(app),
    )
