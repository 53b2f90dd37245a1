"""Deterministic protocol events for a monitor: sessions of scored steps, approvals, stats.

Used by the snapshot tests (through the committed ``data/recorded.json``) and by
``bench/tui_updates.py``. The events have the shapes the daemon sends subscribers.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
RECORDED = DATA / "recorded.json"

CHECKLIST = [
    (1, "Search for USB-C cables"),
    (2, "Sort the results by price"),
    (3, "Open the cheapest cable"),
    (4, "Add it to the cart"),
]
ACTIONS = [
    "fill('12', 'usb-c cable')",
    "click('40')",
    "click('57')",
    "scroll(0, 300)",
    "click('88')",
    "press('12', 'Enter')",
    "go_back()",
]


def session_events(
    sid: str,
    steps: int,
    *,
    seed: int,
    agent: str = "shop-agent",
    intent: str = "Buy the cheapest USB-C cable",
    created: float = 1_700_000_000.0,
    candidates: int = 3,
    approval_at: int | None = None,
    resolve_approval: bool = True,
    repeat_at: int | None = None,
    outcome: str | None = "success",
    progress: bool = True,
) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    ev: list[dict[str, Any]] = [
        {
            "type": "session.started",
            "session_id": sid,
            "intent": intent,
            "start_url": "http://shop.local/",
            "agent": {"name": agent},
            "source": "agent",
        },
        {
            "type": "checklist",
            "session_id": sid,
            "source": "generated",
            "items": [{"index": i, "title": t} for i, t in CHECKLIST],
            "text": "…",
        },
    ]
    level = 0.3
    url = "http://shop.local/"
    for step in range(1, steps + 1):
        if repeat_at is None or step != repeat_at:
            url = f"http://shop.local/p{step}"
        ev.append({"type": "observed", "session_id": sid, "step": step, "url": url})
        level = min(max(level + rng.uniform(-0.12, 0.18), 0.05), 0.95)
        cands = [
            {"thought": f"Step {step}: option {k}.", "action": rng.choice(ACTIONS)}
            for k in range(candidates)
        ]
        if repeat_at is not None and step == repeat_at:
            cands[0]["action"] = ev_last_action(ev)
        rewards = [
            round(min(max(level + rng.uniform(-0.25, 0.1), 0.0), 1.0), 3) for _ in range(candidates)
        ]
        if step % 7 == 3:
            rewards[-1] = None  # type: ignore[call-overload]  # no label parsed
        if repeat_at is not None and step == repeat_at:
            rewards[0] = round(min(1.0, max(r for r in rewards if r is not None) + 0.01), 3)
        best = max(range(candidates), key=lambda k: -1 if rewards[k] is None else rewards[k])
        request = f"c{step}"
        feedback = f"The agent is on step {step}; the checklist is {round(level * 100)}% done."
        if progress:
            for chunk in (feedback[:20], feedback[20:]):
                ev.append(
                    {
                        "type": "score.progress",
                        "session_id": sid,
                        "request": request,
                        "candidate": 0,
                        "sample": 0,
                        "delta": chunk,
                    }
                )
        done = level * len(CHECKLIST)
        results = []
        for k in range(candidates):
            items = []
            for i, _ in CHECKLIST:
                if i <= done - 0.5:
                    probs = (0.8, 0.15, 0.05)
                elif i <= done + 0.5:
                    probs = (0.2, 0.6, 0.2)
                else:
                    probs = (0.1, 0.2, 0.7)
                items.append({"index": i, "yes": probs[0], "in_progress": probs[1], "no": probs[2]})
            results.append(
                {
                    "index": k,
                    "reward": rewards[k],
                    "items": items,
                    "feedback": feedback if rewards[k] is not None else "no label parsed",
                    "samples": [],
                    "parsed_samples": 0 if rewards[k] is None else 1,
                }
            )
        status, by, chosen_action = "auto", None, cands[best]["action"]
        if approval_at == step:
            rid = f"a-{sid}-{step}"
            ev.append(
                {
                    "type": "approval.request",
                    "request_id": rid,
                    "session_id": sid,
                    "step": step,
                    "candidate": cands[best],
                    "candidate_index": best,
                    "reward": rewards[best],
                    "feedback": feedback,
                    "reason": "below_threshold",
                    "expires_in_s": 120.0,
                }
            )
            if not resolve_approval:
                return ev
            ev.append(
                {
                    "type": "approval.resolved",
                    "request_id": rid,
                    "session_id": sid,
                    "decision": "approve",
                    "by": "monitor:tui",
                }
            )
            status, by = "approved", "monitor:tui"
        ev.append(
            {
                "type": "scored",
                "session_id": sid,
                "step": step,
                "results": results,
                "best": best,
                "candidates": cands,
                "decision": {"status": status, "index": best, "action": chosen_action, "by": by},
                "timing": {"queue_ms": 1.0, "model_ms": 200.0},
            }
        )
        ev.append(
            {
                "type": "action",
                "session_id": sid,
                "step": step,
                "action": chosen_action,
                "source": "agent",
            }
        )
    if outcome is not None:
        ev.append({"type": "session.ended", "session_id": sid, "outcome": outcome})
    return ev


def ev_last_action(ev: list[dict[str, Any]]) -> str:
    return next(e["action"] for e in reversed(ev) if e["type"] == "action")


def stats_event(t: float = 1_700_000_100.0) -> dict[str, Any]:
    return {
        "type": "stats",
        "time": t,
        "queue_depth": 2,
        "in_flight": 1,
        "tokens_per_s": 812.5,
        "sessions_active": 2,
        "connections": 3,
        "pending_approvals": 1,
        "step_latency_ms_p50": 640.0,
        "step_latency_ms_p95": 1210.0,
        "device": {
            "name": "NVIDIA H100 80GB HBM3",
            "memory_used_mb": 20480.0,
            "memory_total_mb": 81559.0,
            "utilization": 63.0,
        },
    }


def recorded() -> list[dict[str, Any]]:
    """The snapshot tests' event stream: an ended session, a running one with a repeated action
    and a daemon signal, and one waiting for approval; then stats."""
    ev = session_events(
        "s-ended",
        9,
        seed=1,
        agent="planner",
        intent="Find a 2 m cable",
        created=1_700_000_000.0,
        outcome="failure",
    )
    ev += session_events(
        "s-running", 14, seed=2, created=1_700_000_010.0, repeat_at=12, outcome=None, approval_at=5
    )
    ev.append(
        {
            "type": "signal",
            "session_id": "s-running",
            "step": 13,
            "kind": "loop",
            "message": "the agent revisits the same page",
        }
    )
    ev += session_events(
        "s-waiting",
        6,
        seed=3,
        agent="tree-agent",
        intent="Compare the two cheapest cables",
        created=1_700_000_020.0,
        approval_at=6,
        resolve_approval=False,
        outcome=None,
    )
    ev.append(stats_event())
    return ev


def load_recorded() -> list[dict[str, Any]]:
    return json.loads(RECORDED.read_text(encoding="utf-8"))


if __name__ == "__main__":  # regenerate the committed recording
    DATA.mkdir(exist_ok=True)
    RECORDED.write_text(json.dumps(recorded(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {RECORDED}")
