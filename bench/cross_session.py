"""Cross-session batching: S sessions each send one score request at the same moment.

Two real ``DaemonServer``s on loopback share one engine: ``batched`` (``batch_sessions``
= S: the S requests run in one model call, ``Backend.judge_many``) and ``one_at_a_time``
(``batch_sessions`` = 1: the scheduler runs them one after the other). Each round, S clients
per daemon send their ``score`` together; the wall time runs from the first send to the last
reply. Rounds alternate between the two daemons (drift hits both alike). Used by
``bench/run.py``.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from daemon_client import Client, open_session  # bench/ is on sys.path
from webshepherd.daemon.engine.types import StepInput


async def _client(url: str, token: str, step: StepInput, checklist: str) -> tuple[Client, str]:
    return await open_session(
        url,
        token,
        "bench",
        {
            "intent": step.intent,
            "start_url": step.current_url,
            "observation": {"url": step.current_url, "axtree": step.axtree},
            "checklist": checklist,
        },
    )


async def _round(clients: list[tuple[Client, str]], step: StepInput) -> float:
    """Every client sends one score request at once; seconds until the last reply."""
    candidates = [{"thought": c.thought, "action": c.action} for c in step.candidates]

    async def one(c: Client, sid: str) -> None:
        reply = await c.request(
            {
                "type": "score",
                "session_id": sid,
                "candidates": candidates,
                "samples": step.samples,
                "approval": "never",
            }
        )
        assert reply["type"] == "scored", reply

    t0 = time.perf_counter()
    await asyncio.gather(*(one(c, sid) for c, sid in clients))
    return time.perf_counter() - t0


async def _bench(
    engine: Any, steps: list[StepInput], checklist: str, reps: int, token: str
) -> dict[str, Any]:
    from webshepherd.daemon.build import build_daemon
    from webshepherd.daemon.config import Settings

    modes = {"batched": len(steps), "one_at_a_time": 1}
    with tempfile.TemporaryDirectory(prefix="webshepherd-bench-") as tmp:
        servers: dict[str, Any] = {}
        clients: dict[str, list[tuple[Client, str]]] = {}
        try:
            for name, batch in modes.items():
                settings = Settings.local(
                    Path(tmp) / name,
                    token=token,
                    default_samples=steps[0].samples,
                    batch_sessions=batch,
                    request_timeout_s=3600,
                )
                servers[name] = server = build_daemon(settings, engine)
                await server.start()
                clients[name] = [await _client(server.url, token, s, checklist) for s in steps]
            times: dict[str, list[float]] = {m: [] for m in modes}
            for r in range(reps + 1):  # round 0: warm-up, not counted
                for name in modes:
                    dt = await _round(clients[name], steps[0])
                    if r:
                        times[name].append(dt)
            stats = {name: servers[name].scheduler.batch_stats for name in modes}
        finally:
            for cs in clients.values():
                await asyncio.gather(*(c.ws.close() for c, _ in cs))
            for server in servers.values():
                await server.stop()
    out: dict[str, Any] = {"modes": {}}
    for name in modes:
        med = statistics.median(times[name])
        out["modes"][name] = {
            "batch_sessions": modes[name],
            "wall_s": times[name],
            "wall_s_median": med,
            "steps_per_s": len(steps) / med,
            "largest_call": stats[name].largest,
            "calls": stats[name].calls,
        }
    out["speedup_batched_vs_one_at_a_time"] = (
        out["modes"]["one_at_a_time"]["wall_s_median"] / out["modes"]["batched"]["wall_s_median"]
    )
    return out


def bench_cross_session(
    engine: Any, steps: list[StepInput], checklist: str, reps: int, token: str
) -> dict[str, Any]:
    """``len(steps)`` sessions (one step each; every round scores the first step's
    candidates over each session's own page) through two daemons; see the module doc."""
    return asyncio.run(_bench(engine, steps, checklist, reps, token))


def print_cross_session(r: dict[str, Any]) -> None:
    print(
        f"\n== cross-session batching: {r['sessions']} sessions x K={r['k']} n={r['n']}, "
        f"prefix ~{r['prefix_tokens']} tokens each, {r['output_tokens']} output tokens, "
        f"{r['reps']} rounds, {r['model']} ({r['device']}), real daemons on loopback"
    )
    print(f"  {'mode':<14} {'wall (median)':>14} {'steps/s':>9} {'largest call':>13}")
    for name, m in r["modes"].items():
        print(
            f"  {name:<14} {m['wall_s_median']:>12.3f} s {m['steps_per_s']:>9.3f} "
            f"{m['largest_call']:>13}"
        )
    print(f"  batched is x{r['speedup_batched_vs_one_at_a_time']:.2f} one-at-a-time's speed")
