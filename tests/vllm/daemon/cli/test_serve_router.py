"""The documented deployment on loopback: two ``vllm serve`` replicas behind ``vllm-router``,
``webshepherd serve --backend openai --base-url http://ROUTER/v1`` in front (its engine loaded
from those flags), four agents scoring several steps at once, and one replica killed mid-run.

No step may be lost: every step ends ``scored``. A request cut by the kill is sent again by the
backend (backoff on a reset connection, a stream ending early, 5xx); should that also fail, the
step is answered ``model_error`` / ``overloaded`` and the agent sends it again, as an agent
should. ``stats`` shows the remote engine throughout.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from webshepherd.daemon.cli import build_parser
from webshepherd.daemon.cli.serve import config_from_args, engine_from_args
from webshepherd.daemon.dev.vllm_serve import Process, start_router
from webshepherd.daemon.engine.backends.openai_backend import OpenAIBackend
from webshepherd.daemon.engine.backends.remote_health import parse_metrics

from tests.fixtures.daemon import CANDS, WsClient, start_session
from tests.fixtures.poll import until

pytestmark = pytest.mark.model

SESSIONS = 4
STEPS = 3
AGENT_RETRIES = 5


def answered(replica: Process) -> float:
    """Requests the replica finished (``vllm:request_success_total``, summed over labels)."""
    found = re.findall(
        r"^vllm:request_success_total(?:\{[^}]*\})?\s+(\S+)", replica.metrics(), re.M
    )
    return sum(float(v) for v in found)


def observation(session: int, step: int) -> dict[str, str]:
    items = "\n".join(f"\t[{10 + i}] link 'Cable {session}-{step}-{i}'" for i in range(12))
    return {
        "url": f"http://shop.local/s{session}/p{step}",
        "axtree": f"[1] RootWebArea 'Shop {session}', focused\n\t[2] searchbox 'Search'\n{items}",
    }


async def score_step(agent: WsClient, sid: str, session: int, step: int) -> tuple[dict, int]:
    """Score one step (its observation inline), then report the action; an error the agent may
    retry (``model_error``, ``overloaded``) is retried after a second. ``(scored, retries)``."""
    for attempt in range(AGENT_RETRIES + 1):
        reply = await agent.request(
            {
                "type": "score",
                "session_id": sid,
                "observation": observation(session, step),
                "candidates": CANDS,
                "samples": 1,
                "approval": "never",
            },
            timeout=300,
        )
        if reply["type"] == "scored":
            await agent.request({"type": "action", "session_id": sid, "action": CANDS[0]["action"]})
            return reply, attempt
        assert reply["type"] == "error" and reply["code"] in ("model_error", "overloaded"), reply
        await asyncio.sleep(1.0)
    raise AssertionError(f"session {session} step {step} was never scored: {reply}")


@pytest.mark.timeout(1500)  # the replicas' start counts (fixture setup)
async def test_four_sessions_through_the_router_survive_a_replica_killed(
    served: Process,
    second_replica: Process,
    vllm_logs: Path,
    tiny_model_path: Path,
    start_daemon,
) -> None:
    # round_robin: replica B surely has steps in flight when it is killed (cache_aware may
    # keep these similar sessions on one replica)
    router = start_router([served, second_replica], vllm_logs, policy="round_robin")
    try:
        argv = ["serve", "--model", str(tiny_model_path), "--backend", "openai"]
        argv += ["--base-url", router.api, "--max-context", "2048"]
        args = build_parser().parse_args(argv)
        engine = engine_from_args(args, config_from_args(args))
        engine.config = replace(engine.config, max_new_tokens=64, checklist_max_new_tokens=64)
        backend = engine.backend
        assert isinstance(backend, OpenAIBackend) and backend.base_url == router.api
        backend.remote.probe_every_s = 0.5
        # a step waits for its retries: the daemon's own limit must be longer than them
        daemon = await start_daemon(engine=engine, stats_interval_s=0.2, request_timeout_s=600)
        monitor = await daemon.client(role="monitor", name="tui")
        await monitor.request({"type": "subscribe", "sessions": "*"})
        agents = [await daemon.client(name=f"agent-{i}") for i in range(SESSIONS)]
        sids = [
            await start_session(a, intent=f"Buy the cheapest USB-C cable, shop {i}")
            for i, a in enumerate(agents)
        ]
        results: dict[tuple[int, int], dict[str, Any]] = {}
        agent_retries = 0

        async def run(i: int) -> None:
            nonlocal agent_retries
            for s in range(STEPS):
                results[(i, s)], retried = await score_step(agents[i], sids[i], i, s)
                agent_retries += retried

        async def kill_one() -> float:
            # a step scored says nothing of replica B (the router may have sent the first ones
            # all to A): wait until each replica has answered a request, steps still to come
            done: list[float] = []

            async def both_served() -> bool:
                done[:] = [await asyncio.to_thread(answered, r) for r in (served, second_replica)]
                return all(n > 0 for n in done) or len(results) == SESSIONS * STEPS

            await until(both_served, 600, "each replica to answer a request", interval=0.2)
            assert all(n > 0 for n in done), f"a replica answered none of the steps: {done}"
            assert len(results) < SESSIONS * STEPS, "every step was scored before the kill"
            metrics = await asyncio.to_thread(second_replica.metrics)
            in_flight = parse_metrics(metrics).get("server_running", 0)
            second_replica.kill()
            print(f"replica-b killed with {in_flight:g} requests running")
            return time.monotonic()

        killed_at, *_ = await asyncio.gather(kill_one(), *(run(i) for i in range(SESSIONS)))
        # every step of every session was scored
        assert sorted(results) == [(i, s) for i in range(SESSIONS) for s in range(STEPS)]
        for reply in results.values():
            assert len(reply["results"]) == len(CANDS)
            assert all(r["probabilities"] == "top_k" for r in reply["results"])
        assert second_replica.proc.poll() is not None and served.proc.poll() is None
        health = backend.remote.read()
        print(  # for the record in the test log: what the kill cost
            f"killed replica-b at {killed_at:.1f}; backend retries {health['retries']}, "
            f"failures {health['failures']}, agent retries {agent_retries}"
        )
        assert health["requests"] >= SESSIONS * STEPS
        assert health["failures"] <= agent_retries  # each failure was answered, then retried

        def settled(m: dict[str, Any]) -> bool:  # frames sent during the run come first
            remote = m.get("remote") or {}
            return m["type"] == "stats" and remote.get("reachable") and remote["in_flight"] == 0

        remote = (await monitor.wait_for(settled, 30))["remote"]
        assert remote["base_url"] == router.api
    finally:
        router.stop()
