"""Cost of the TUI's updates: fold daemon events into the state, redraw under a headless app.

    .venv/bin/python bench/tui_updates.py [--sessions 20] [--steps 500] [--batch 200]

Events are the ones a subscriber gets (``tests/tui/events.py``: observed, two score.progress
chunks, scored with 3 candidates and 4 checklist items, action per step), interleaved across
sessions as they would arrive live. Prints events/s for folding alone, then, in a headless app
at 160×48 with the busiest session selected, the time of one refresh (fold a batch of events,
sync the widgets, let Textual lay out and render the frame): p50/p95/max in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from webshepherd.tui.app import WebShepherdApp
from webshepherd.tui.device import DeviceProbe, DeviceReading
from webshepherd.tui.state import MonitorState
from webshepherd.tui.widgets.reward_plot import RewardPlot

from tests.tui.events import session_events, stats_event


class Probe(DeviceProbe):
    """A device probe that reads nothing (the bench measures the TUI, not the machine)."""

    def __init__(self) -> None:
        super().__init__(use_psutil=False)

    def read(self) -> DeviceReading:
        return DeviceReading(cpu_percent=0.0, cpus=1, source="bench")


def interleaved(sessions: int, steps: int) -> list[dict[str, Any]]:
    per = [
        session_events(
            f"s{i:02d}",
            steps,
            seed=i,
            agent=f"agent-{i}",
            repeat_at=steps // 2,
            approval_at=steps - 1 if i % 5 == 0 else None,
        )
        for i in range(sessions)
    ]
    out: list[dict[str, Any]] = []
    cursors = [0] * sessions
    while any(c < len(p) for c, p in zip(cursors, per, strict=True)):
        for i, p in enumerate(per):  # one step's worth (≈5 events) of each session in turn
            take = p[cursors[i] : cursors[i] + 5]
            cursors[i] += len(take)
            out.extend(take)
        out.append(stats_event())
    return out


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def bench_fold(events: list[dict[str, Any]]) -> float:
    state = MonitorState()
    t0 = time.perf_counter()
    for e in events:
        state.fold_raw(e)
    return len(events) / (time.perf_counter() - t0)


async def bench_refresh(events: list[dict[str, Any]], batch: int) -> dict[str, float]:
    app = WebShepherdApp(connect=False, probe=Probe(), refresh_s=3600)  # refresh by hand here
    app.animation_level = "none"
    sync_ms: list[float] = []
    frame_ms: list[float] = []
    async with app.run_test(size=(160, 48)) as pilot:
        while not app.main.ready:
            await pilot.pause(0.01)
        idle_ms = []
        for _ in range(20):  # what a frame costs when nothing changed (Pilot's own overhead)
            t0 = time.perf_counter()
            app.main.sync()
            await pilot.pause()
            idle_ms.append((time.perf_counter() - t0) * 1e3)
        for start in range(0, len(events), batch):
            t0 = time.perf_counter()
            for e in events[start : start + batch]:
                app.state.fold_raw(e)
            t1 = time.perf_counter()
            app.main.sync()
            t2 = time.perf_counter()
            await pilot.pause()  # layout + render of the frame
            t3 = time.perf_counter()
            sync_ms.append((t2 - t1) * 1e3)
            frame_ms.append((t3 - t0) * 1e3)
        plot_points = len(app.main.query_one(RewardPlot).points[0])
    return {
        "refreshes": len(frame_ms),
        "sync_p50": pct(sync_ms, 50),
        "sync_p95": pct(sync_ms, 95),
        "frame_p50": pct(frame_ms, 50),
        "frame_p95": pct(frame_ms, 95),
        "frame_max": max(frame_ms),
        "idle_p50": pct(idle_ms, 50),
        "plot_points": plot_points,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--batch", type=int, default=200, help="events folded per refresh")
    args = ap.parse_args()
    events = interleaved(args.sessions, args.steps)
    print(f"{args.sessions} sessions × {args.steps} steps: {len(events)} events")
    rate = bench_fold(events)
    print(f"fold only:      {rate:,.0f} events/s ({1e6 / rate:.1f} µs/event)")
    r = asyncio.run(bench_refresh(events, args.batch))
    print(
        f"refreshes:      {r['refreshes']:.0f} (one per {args.batch} events, 160×48, "
        f"selected session's plot ends with {r['plot_points']:.0f} points)"
    )
    print(f"widget sync:    p50 {r['sync_p50']:.2f} ms  p95 {r['sync_p95']:.2f} ms")
    print(
        f"fold+sync+frame p50 {r['frame_p50']:.2f} ms  p95 {r['frame_p95']:.2f} ms  "
        f"max {r['frame_max']:.2f} ms"
    )
    print(f"idle frame      p50 {r['idle_p50']:.2f} ms (nothing changed: the harness's share)")
    total = len(events) / (r["refreshes"] * r["frame_p50"] / 1e3)
    print(f"sustained:      ≈{total:,.0f} events/s with a redraw every {args.batch} events")


if __name__ == "__main__":
    main()
