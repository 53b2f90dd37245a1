"""What the browser demo reports: ``summary.json`` (steps, approvals, outcome, totals) and
the closing line in the terminal."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from rich.console import Console
from webshepherd.daemon.demo.agent import TASK
from webshepherd.daemon.demo.browser_steps import DemoRun
from webshepherd.daemon.demo.run import console_safe

__all__ = ["build_summary", "print_totals", "write_summary"]


def build_summary(
    run: DemoRun, outcome: dict[str, Any], headless: bool, wall_s: float
) -> dict[str, Any]:
    """The contents of ``summary.json``."""
    lat = [s["latency_ms"] for s in run.steps]
    return {
        "task": TASK,
        "mode": "headless" if headless else "headed",
        "steps": run.steps,
        "approvals": run.approvals,
        "outcome": outcome,
        "totals": {
            "steps": len(run.steps),
            "approvals": len(run.approvals),
            "agreed": sum(
                s["best"] is not None and s["candidates"][s["best"]]["good"] for s in run.steps
            ),
            # steps whose checklist verdicts (the action run) are the shop's own labels
            "checklist_as_shop": sum(s["checklist"] == s.get("shop") for s in run.steps),
            "step_latency_ms": {
                "mean": round(statistics.fmean(lat), 1) if lat else None,
                "p50": round(statistics.median(lat), 1) if lat else None,
                "max": max(lat) if lat else None,
            },
            "wall_s": round(wall_s, 1),
        },
    }


def print_totals(console: Console, summary: dict[str, Any], out: Path | None) -> None:
    """The outcome, the approvals, agreement and latency in one line (and what was written)."""
    t, o = summary["totals"], summary["outcome"]
    status = (
        f"[green]order {o['order']} placed in {t['steps']} steps[/]"
        if o["status"] == "success"
        else f"[red]task not finished after {t['steps']} steps[/]"
    )
    decided = ", ".join(f"{a['action']} {a['decision']}" for a in summary["approvals"])
    lat = t["step_latency_ms"]
    console.print(
        f"{status}; approvals: {console_safe(decided) or 'none'}; Web-Shepherd ranked the good "
        f"action first in {t['agreed']} of {t['steps']} steps, its checklist as the shop's in "
        f"{t['checklist_as_shop']}; step latency p50 {lat['p50']} ms, "
        f"max {lat['max']} ms (approval wait excluded); {t['wall_s']} s in all."
    )
    if out is not None:
        shots = [s["screenshot"] for s in summary["steps"]] + [
            a["screenshot"] for a in summary["approvals"]
        ]
        console.print(
            f"wrote {out}/summary.json and {len([s for s in shots if s]) + 1} screenshots"
        )


def write_summary(out: Path, summary: dict[str, Any]) -> None:
    """``summary.json`` in ``out``."""
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
