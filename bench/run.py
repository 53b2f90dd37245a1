"""Benchmarks of the reward path: shared-prefix scoring, daemon overhead, GPU step latency.

    .venv/bin/python bench/run.py [--quick] [--gpu] --json OUT

1. **Shared prefix vs each candidate alone** (K candidates x n samples, the engine on a
   random-weight Qwen2 model, a fixed output length): the same step scored four ways, side by
   side, repeats interleaved: ``shared`` (the prefix prefilled once and kept once, K x n rows
   decoded in one batch with split prefix/row attention), ``shared_copies`` (the prefix
   prefilled once, its KV cache repeated for every row), ``unshared`` (each candidate's whole
   prompt prefilled, still one batch) and ``alone`` (K separate calls, one candidate each,
   nothing shared: the paper's loop). Wall-time and prefilled-token ratios against ``shared``.
1b. **Cross-session batching** (bench/cross_session.py): S sessions (own pages) each send a
   K x n score request at once to a real daemon; ``batched`` (one model call) against
   ``one_at_a_time`` (``batch_sessions=1``), wall time and steps/s, rounds interleaved.
2. **Daemon overhead**: a real ``DaemonServer`` on loopback; round-trip latency of ``observe``
   with a 200 KB AX tree (p50/p99), and sustained messages/s with 50 concurrent clients
   (bounded by a message count and a time limit).
3. **GPU** (``--gpu``, needs CUDA): step-scoring latency p50/p95 on a Qwen2.5-3B-shaped random
   model (8k-token prefix, K = n = 5, 300 output tokens) beside the arithmetic floor:
   prefill FLOPs / peak FLOP/s + decode bytes / memory bandwidth. Skipped with a message
   when CUDA is absent.

Every figure is printed and written to the JSON file. The random models use the tiny model's
tokenizer (``ensure_tiny_model()``); their rewards are noise, their costs are real.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from cross_session import bench_cross_session, print_cross_session  # bench/ is on sys.path
from daemon_client import Client, open_session
from webshepherd.daemon.dev.tiny_model import ensure_tiny_model
from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend
from webshepherd.daemon.engine.engine import Engine, EngineConfig
from webshepherd.daemon.engine.prompts import format_trajectory, split_judge_prompt
from webshepherd.daemon.engine.types import StepInput
from webshepherd.protocol.common import Turn

REFERENCE = (
    "Checklist 1: Search for usb-c cables\n- Goal: Type the query into the search box.\n"
    "Checklist 2: Sort by price\n- Goal: Order the results cheapest first.\n"
    "Checklist 3: Open the cheapest cable\n- Goal: Reach its product page."
)
TOKEN = "bench-token-webshepherd-0123456789"


@dataclass(frozen=True)
class Shape:
    """A Qwen2 configuration (random weights)."""

    name: str
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int | None = None  # None: the tokenizer's
    tie: bool = True


CPU_SHAPE = Shape("qwen2-random-h384-l6", 384, 1536, 6, 6, 2)
QUICK_SHAPE = Shape("qwen2-random-h64-l2", 64, 128, 2, 4, 2)
DRY_RUN_SHAPE = Shape("qwen2-random-h64-l2-v151936", 64, 128, 2, 4, 2, vocab=151936)
QWEN25_3B = Shape("qwen2.5-3b-shaped-random", 2048, 11008, 36, 16, 2, vocab=151936)

# Dense bf16 tensor-core peak (TFLOP/s) and memory bandwidth (GB/s), from the vendor data sheets.
GPU_PEAKS: dict[str, tuple[float, float]] = {
    "H200": (989.0, 4800.0),
    "H100 SXM": (989.0, 3350.0),
    "H100 PCIe": (756.0, 2000.0),
    "H100": (989.0, 3350.0),
    "A100": (312.0, 2039.0),
    "L40S": (362.0, 864.0),
    "A10": (125.0, 600.0),
}


# -- helpers ------------------------------------------------------------------------------


# (wall seconds, prefilled tokens, generated tokens, prefix shared) of one scoring
Timed = tuple[float, int, int, bool]


def pct(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0..100), linear interpolation."""
    s = sorted(values)
    if not s:
        return float("nan")
    i = (len(s) - 1) * q / 100
    lo = int(i)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (i - lo)


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu": platform.processor() or platform.machine(),
        "cpu_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.is_available(),
    }
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def random_model(shape: Shape, tokenizer: Any, device: torch.device, dtype: torch.dtype) -> Any:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(
        vocab_size=shape.vocab or len(tokenizer),
        hidden_size=shape.hidden,
        intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        max_position_embeddings=32768,
        tie_word_embeddings=shape.tie,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with device:
            model = Qwen2ForCausalLM(cfg)
    finally:
        torch.set_default_dtype(old)
    return model.eval()


def backends(
    shape: Shape, device: torch.device, dtype: torch.dtype
) -> tuple[TransformersBackend, TransformersBackend, Any]:
    """Two backends on one random model: prefix sharing on (one prefix copy, split attention),
    and off; fixed output length."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(ensure_tiny_model(progress=False)))
    tok.model_max_length = 1 << 30  # the random model's context is 32k; no length warnings
    model = random_model(shape, tok, device, dtype)
    shared = TransformersBackend(model, tok, shape.name, share_prefix=True, ignore_stop=True)
    alone = TransformersBackend(model, tok, shape.name, share_prefix=False, ignore_stop=True)
    return shared, alone, model


def make_step(
    backend: TransformersBackend, prefix_tokens: int, k: int, n: int, session: int = 0
) -> StepInput:
    """A step with ``k`` candidates whose shared judge prefix is about ``prefix_tokens`` long
    (``session`` varies the page, so different sessions have different prefixes)."""
    history = tuple(
        Turn(thought=f"I look at the results of step {i}.", action=f"click('{100 + i}')")
        for i in range(3)
    )
    candidates = tuple(
        Turn(
            thought=f"Candidate {j}: the cheapest cable is probably item {j}; open it.",
            action=f"click('{200 + j}')",
        )
        for j in range(k)
    )
    checklist = Engine(backend).parse_reference_checklist(REFERENCE)

    def line(i: int) -> str:
        return f"\t[{1000 + i}] link 'USB-C cable model {i}-{session}, 2 m, braided' url: /item/{i}"

    def prefix_len(lines: int) -> int:
        tree = "[1] RootWebArea 'Shop', focused\n" + "\n".join(line(i) for i in range(lines))
        prefix, _ = split_judge_prompt(
            backend.render_chat,
            intent="Buy the cheapest USB-C cable",
            trajectory=format_trajectory(history, 10),
            current_url="http://shop.local/search?q=usb-c",
            text_observation=tree,
            checklist=checklist.text,
            candidates=candidates,
        )
        return backend.count_tokens(prefix)

    base, probe = prefix_len(0), prefix_len(50)
    per_line = max(1.0, (probe - base) / 50)
    lines = max(0, round((prefix_tokens - base) / per_line))
    tree = "[1] RootWebArea 'Shop', focused\n" + "\n".join(line(i) for i in range(lines))
    return StepInput(
        intent="Buy the cheapest USB-C cable",
        current_url="http://shop.local/search?q=usb-c",
        axtree=tree,
        checklist=checklist,
        history=history,
        candidates=candidates,
        samples=n,
    )


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# -- 1. shared prefix vs each candidate alone ---------------------------------------------


def bench_prefix(
    shape: Shape,
    prefix_tokens: int,
    out_tokens: int,
    k: int,
    n: int,
    reps: int,
    device: torch.device,
    dtype: torch.dtype,
) -> dict[str, Any]:
    b_shared, b_alone, model = backends(shape, device, dtype)
    b_copies = TransformersBackend(
        model, b_shared.tokenizer, shape.name, ignore_stop=True, split_attention=False
    )
    cfg = EngineConfig(max_new_tokens=out_tokens, temperature=1.0)
    e_shared, e_alone, e_copies = Engine(b_shared, cfg), Engine(b_alone, cfg), Engine(b_copies, cfg)
    step = make_step(b_shared, prefix_tokens, k, n)
    reference = step.checklist
    assert reference is not None  # make_step gives it one

    # the same engines with one output token: the time to the first token (prefill) alone
    one = replace(cfg, max_new_tokens=1)
    f_shared, f_alone, f_copies = Engine(b_shared, one), Engine(b_alone, one), Engine(b_copies, one)

    def one_call(full: Engine, first_token: Engine) -> Callable[..., Timed]:
        """A mode that scores the whole step in one engine call."""

        def run(first: bool = False) -> Timed:
            t0 = time.perf_counter()
            s = (first_token if first else full).score(step)
            sync(device)
            return time.perf_counter() - t0, s.prompt_tokens, s.generated_tokens, s.prefix_shared

        return run

    run_shared = one_call(e_shared, f_shared)
    run_copies = one_call(e_copies, f_copies)
    run_unshared = one_call(e_alone, f_alone)

    def run_alone(first: bool = False) -> Timed:
        t0 = time.perf_counter()
        pre = gen = 0
        for c in step.candidates:
            s = (f_alone if first else e_alone).score(replace(step, candidates=(c,)))
            pre, gen = pre + s.prompt_tokens, gen + s.generated_tokens
        sync(device)
        return time.perf_counter() - t0, pre, gen, False

    modes = {
        "shared": run_shared,
        "shared_copies": run_copies,
        "unshared": run_unshared,
        "alone": run_alone,
    }
    # warm-up: one small call through each path (allocator, kernels, tokenizer caches)
    small = replace(step, axtree="[1] RootWebArea 'Shop'", candidates=step.candidates[:2])
    e_shared.score(small)
    e_copies.score(small)
    e_alone.score(small)
    times: dict[str, list[float]] = {m: [] for m in modes}
    firsts: dict[str, list[float]] = {m: [] for m in modes}
    facts: dict[str, tuple[int, int, bool]] = {}
    for _ in range(reps):
        for name, fn in modes.items():  # interleaved: drift hits every mode alike
            dt, pre, gen, shared = fn()
            times[name].append(dt)
            facts[name] = (pre, gen, shared)
            firsts[name].append(fn(True)[0])
    result: dict[str, Any] = {
        "model": shape.name,
        "params": sum(p.numel() for p in b_shared.model.parameters()),
        "device": str(device),
        "dtype": str(dtype).replace("torch.", ""),
        "k": k,
        "n": n,
        "reps": reps,
        "prefix_tokens": b_shared.count_tokens(
            split_judge_prompt(
                b_shared.render_chat,
                intent=step.intent,
                trajectory=format_trajectory(step.history, 10),
                current_url=step.current_url,
                text_observation=step.axtree,
                checklist=reference.text,
                candidates=step.candidates,
            )[0]
        ),
        "output_tokens": out_tokens,
        "modes": {},
    }
    for name in modes:
        pre, gen, shared = facts[name]
        result["modes"][name] = {
            "wall_s_median": statistics.median(times[name]),
            "wall_s": times[name],
            "first_token_s_median": statistics.median(firsts[name]),
            "prefilled_tokens": pre,
            "generated_tokens": gen,
            "prefix_shared": shared,
        }
    base = result["modes"]["shared"]
    for name in ("shared_copies", "unshared", "alone"):
        m = result["modes"][name]
        result[f"wall_ratio_{name}_vs_shared"] = m["wall_s_median"] / base["wall_s_median"]
        result[f"prefill_ratio_{name}_vs_shared"] = m["prefilled_tokens"] / base["prefilled_tokens"]
        result[f"first_token_ratio_{name}_vs_shared"] = (
            m["first_token_s_median"] / base["first_token_s_median"]
        )
    return result


def print_prefix(r: dict[str, Any]) -> None:
    print(
        f"\n== shared prefix vs each candidate alone: {r['model']} ({r['params'] / 1e6:.1f} M "
        f"params, {r['device']}, {r['dtype']}), K={r['k']} n={r['n']}, prefix "
        f"{r['prefix_tokens']} tokens, {r['output_tokens']} output tokens, {r['reps']} reps"
    )
    print(
        f"  {'mode':<13} {'wall (median)':>14} {'first token':>12} {'prefilled':>10} "
        f"{'generated':>10}  shared"
    )
    for name, m in r["modes"].items():
        print(
            f"  {name:<13} {m['wall_s_median']:>12.3f} s {m['first_token_s_median']:>10.3f} s "
            f"{m['prefilled_tokens']:>10} {m['generated_tokens']:>10}  {m['prefix_shared']}"
        )
    for name in ("shared_copies", "unshared", "alone"):
        print(
            f"  {name} / shared: wall x{r[f'wall_ratio_{name}_vs_shared']:.2f}, "
            f"first token x{r[f'first_token_ratio_{name}_vs_shared']:.2f}, "
            f"prefilled tokens x{r[f'prefill_ratio_{name}_vs_shared']:.2f}"
        )


def cross_session(
    shape: Shape,
    prefix_tokens: int,
    out_tokens: int,
    k: int,
    n: int,
    sessions: int,
    reps: int,
    device: torch.device,
) -> dict[str, Any]:
    """Section 1b: ``sessions`` sessions scored together vs one at a time (real daemons)."""
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    b_shared, _, _ = backends(shape, device, dtype)
    engine = Engine(b_shared, EngineConfig(max_new_tokens=out_tokens, temperature=1.0))
    steps = [make_step(b_shared, prefix_tokens, k, n, session=i) for i in range(sessions)]
    r = bench_cross_session(engine, steps, REFERENCE, reps, TOKEN)
    r.update(
        model=shape.name,
        device=str(device),
        sessions=sessions,
        k=k,
        n=n,
        prefix_tokens=prefix_tokens,
        output_tokens=out_tokens,
        reps=reps,
    )
    return r


# -- 2. daemon overhead -------------------------------------------------------------------


async def _connect(url: str, name: str) -> tuple[Client, str]:
    return await open_session(
        url,
        TOKEN,
        name,
        {
            "intent": "Buy the cheapest USB-C cable",
            "start_url": "http://shop.local/",
            "observation": {"url": "http://shop.local/", "axtree": "[1] RootWebArea 'Shop'"},
            "checklist": REFERENCE,
        },
    )


def axtree_of(size: int) -> str:
    lines, total, i = [], 0, 0
    while total < size:
        line = f"\t\t[{i}] link 'Product {i}: USB-C cable, braided, 2 m' url: /item/{i}"
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines)[:size]


async def _daemon_bench(
    engine: Engine,
    latency_msgs: int,
    tree_bytes: int,
    clients: int,
    per_client: int,
    tput_tree_bytes: int,
    time_limit_s: float,
) -> dict[str, Any]:
    from webshepherd.daemon.build import build_daemon
    from webshepherd.daemon.config import Settings

    with tempfile.TemporaryDirectory(prefix="webshepherd-bench-") as tmp:
        server = build_daemon(Settings.local(Path(tmp), token=TOKEN, default_samples=1), engine)
        await server.start()
        try:
            # round-trip latency, one client, sequential
            c, sid = await _connect(server.url, "latency")
            big = axtree_of(tree_bytes)
            msg = {"type": "observe", "session_id": sid, "url": "http://shop.local/", "axtree": big}
            for _ in range(3):  # warm-up
                assert (await c.request(msg))["type"] == "observed"
            lat: list[float] = []
            for _ in range(latency_msgs):
                t0 = time.perf_counter()
                reply = await c.request(msg)
                lat.append(time.perf_counter() - t0)
                assert reply["type"] == "observed", reply
            await c.ws.close()

            # sustained throughput, many concurrent clients
            conns = await asyncio.gather(*(_connect(server.url, f"c{i}") for i in range(clients)))
            small = axtree_of(tput_tree_bytes)
            done = 0
            deadline = time.perf_counter() + time_limit_s

            async def loop(c: Client, sid: str) -> None:
                nonlocal done
                m = {
                    "type": "observe",
                    "session_id": sid,
                    "url": "http://shop.local/",
                    "axtree": small,
                }
                for _ in range(per_client):
                    if time.perf_counter() > deadline:
                        return
                    reply = await c.request(m)
                    assert reply["type"] == "observed", reply
                    done += 1

            t0 = time.perf_counter()
            await asyncio.gather(*(loop(c, sid) for c, sid in conns))
            elapsed = time.perf_counter() - t0
            await asyncio.gather(*(c.ws.close() for c, _ in conns))
        finally:
            await server.stop()
    return {
        "observe_tree_bytes": len(big),
        "latency_messages": latency_msgs,
        "latency_ms_p50": pct(lat, 50) * 1e3,
        "latency_ms_p99": pct(lat, 99) * 1e3,
        "latency_ms_mean": statistics.fmean(lat) * 1e3,
        "throughput_clients": clients,
        "throughput_tree_bytes": len(small),
        "throughput_messages": done,
        "throughput_elapsed_s": elapsed,
        "throughput_msgs_per_s": done / elapsed if elapsed > 0 else float("nan"),
        "throughput_hit_time_limit": done < clients * per_client,
    }


def bench_daemon(engine: Engine, quick: bool) -> dict[str, Any]:
    return asyncio.run(
        _daemon_bench(
            engine,
            latency_msgs=30 if quick else 300,
            tree_bytes=200_000,
            clients=50,
            per_client=4 if quick else 40,
            tput_tree_bytes=2_000,
            time_limit_s=20.0 if quick else 60.0,
        )
    )


def print_daemon(r: dict[str, Any]) -> None:
    print("\n== daemon overhead (real DaemonServer, loopback WebSocket)")
    print(
        f"  observe round trip, {r['observe_tree_bytes'] / 1000:.0f} KB AX tree, "
        f"{r['latency_messages']} msgs: p50 {r['latency_ms_p50']:.2f} ms, "
        f"p99 {r['latency_ms_p99']:.2f} ms"
    )
    print(
        f"  sustained: {r['throughput_clients']} concurrent clients, observe with a "
        f"{r['throughput_tree_bytes'] / 1000:.0f} KB tree: {r['throughput_msgs_per_s']:.0f} msgs/s "
        f"({r['throughput_messages']} msgs in {r['throughput_elapsed_s']:.2f} s)"
    )


# -- 3. GPU step latency beside the arithmetic floor --------------------------------------


def gpu_peaks(name: str) -> tuple[float, float] | None:
    for key, val in GPU_PEAKS.items():  # most specific first
        if all(part in name for part in key.split()):
            return val
    return None


def floor_estimate(
    shape: Shape,
    prefix: int,
    suffixes: list[int],
    n: int,
    out: int,
    peak_tflops: float,
    bandwidth_gbs: float,
    bytes_per_param: int = 2,
) -> dict[str, float]:
    """Ideal cost of one step: the prefix prefilled once, K x n rows decoded together.

    Prefill FLOPs = 2 x (non-embedding params) x tokens + causal attention (2 x layers x T^2 x
    hidden over the prefix, plus each suffix against prefix + itself) + the LM head for the K
    last positions. Decode bytes, per step = every weight read once + the KV cache read once
    (the shared prefix once, each row's own suffix and generated tokens).
    """
    h, layers, vocab = shape.hidden, shape.layers, shape.vocab or 0
    head_dim = h // shape.heads
    kv = shape.kv_heads * head_dim
    per_layer = h * h + 2 * h * kv + h * h + 3 * h * shape.intermediate  # q, k, v, o, mlp
    body = layers * per_layer
    lm_head = h * vocab
    total_params = body + lm_head * (1 if shape.tie else 2)
    t = prefix + sum(suffixes)
    attn = 2 * layers * h * (prefix * prefix + sum(s * (2 * prefix + s) for s in suffixes))
    prefill_flops = 2 * body * t + attn + 2 * lm_head * len(suffixes)
    kv_bytes_per_token = layers * 2 * kv * bytes_per_param
    rows = len(suffixes) * n
    decode_bytes = 0.0
    for step in range(out):
        own = sum(s + step for s in suffixes) * n
        decode_bytes += total_params * bytes_per_param + kv_bytes_per_token * (prefix + own)
    decode_flops = out * rows * (2 * body + 2 * lm_head)
    prefill_s = prefill_flops / (peak_tflops * 1e12)
    decode_s = max(decode_bytes / (bandwidth_gbs * 1e9), decode_flops / (peak_tflops * 1e12))
    return {
        "prefill_tflop": prefill_flops / 1e12,
        "decode_gb": decode_bytes / 1e9,
        "floor_prefill_s": prefill_s,
        "floor_decode_s": decode_s,
        "floor_total_s": prefill_s + decode_s,
        "peak_tflops": peak_tflops,
        "bandwidth_gbs": bandwidth_gbs,
    }


def bench_gpu(
    shape: Shape,
    prefix_tokens: int,
    out_tokens: int,
    k: int,
    n: int,
    reps: int,
    device: torch.device,
    peak: tuple[float, float] | None,
) -> dict[str, Any]:
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    b_shared, _, _ = backends(shape, device, dtype)
    engine = Engine(b_shared, EngineConfig(max_new_tokens=out_tokens, temperature=1.0))
    step = make_step(b_shared, prefix_tokens, k, n)
    reference = step.checklist
    assert reference is not None  # make_step gives it one
    engine.score(replace(step, axtree="[1] RootWebArea 'Shop'"))  # warm-up
    lat: list[float] = []
    s = None
    for _ in range(reps):
        sync(device)
        t0 = time.perf_counter()
        s = engine.score(step)
        sync(device)
        lat.append(time.perf_counter() - t0)
    assert s is not None
    prefix, suffixes = split_judge_prompt(
        b_shared.render_chat,
        intent=step.intent,
        trajectory=format_trajectory(step.history, 10),
        current_url=step.current_url,
        text_observation=step.axtree,
        checklist=reference.text,
        candidates=step.candidates,
    )
    p = b_shared.count_tokens(prefix)
    suf = [b_shared.count_tokens(prefix + x) - p for x in suffixes]
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    result: dict[str, Any] = {
        "model": shape.name,
        "device": name,
        "params": sum(x.numel() for x in b_shared.model.parameters()),
        "k": k,
        "n": n,
        "prefix_tokens": p,
        "output_tokens": out_tokens,
        "reps": reps,
        "latency_s": lat,
        "latency_s_p50": pct(lat, 50),
        "latency_s_p95": pct(lat, 95),
        "prefilled_tokens": s.prompt_tokens,
        "generated_tokens": s.generated_tokens,
        "prefix_shared": s.prefix_shared,
    }
    if peak is not None:
        result["floor"] = floor_estimate(shape, p, suf, n, out_tokens, *peak)
        result["p50_over_floor"] = result["latency_s_p50"] / result["floor"]["floor_total_s"]
    return result


def print_gpu(r: dict[str, Any]) -> None:
    print(
        f"\n== step scoring on {r['device']}: {r['model']} ({r['params'] / 1e9:.2f} B params), "
        f"K={r['k']} n={r['n']}, prefix {r['prefix_tokens']} tokens, "
        f"{r['output_tokens']} output tokens, {r['reps']} reps"
    )
    print(f"  latency p50 {r['latency_s_p50']:.3f} s, p95 {r['latency_s_p95']:.3f} s")
    f = r.get("floor")
    if f:
        print(
            f"  floor {f['floor_total_s']:.3f} s = prefill {f['prefill_tflop']:.1f} TFLOP / "
            f"{f['peak_tflops']:.0f} TFLOP/s ({f['floor_prefill_s']:.3f} s) + decode "
            f"{f['decode_gb']:.1f} GB / {f['bandwidth_gbs']:.0f} GB/s ({f['floor_decode_s']:.3f} s)"
            f"; p50 is x{r['p50_over_floor']:.1f} the floor"
        )
    else:
        print("  floor: unknown GPU; pass --peak-tflops and --bandwidth-gbs")


# -- main ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter, allow_abbrev=False
    )
    ap.add_argument("--quick", action="store_true", help="small sizes (CI: seconds, not minutes)")
    ap.add_argument("--json", type=Path, required=True, help="write every figure here")
    ap.add_argument("--gpu", action="store_true", help="also the GPU step-latency section")
    ap.add_argument("--prefix-tokens", type=int, help="shared-prefix section: prefix length")
    ap.add_argument("--out-tokens", type=int, help="shared-prefix section: output tokens")
    ap.add_argument("--reps", type=int, help="shared-prefix section: repeats per mode")
    ap.add_argument("--device", default="auto", help="shared-prefix section: cpu, cuda, auto")
    ap.add_argument("--skip-daemon", action="store_true", help="skip the daemon section")
    ap.add_argument("--sessions", type=int, default=4, help="cross-session section: sessions")
    ap.add_argument(
        "--skip-cross-session", action="store_true", help="skip the cross-session section"
    )
    ap.add_argument("--peak-tflops", type=float, help="GPU: dense bf16 peak, TFLOP/s")
    ap.add_argument("--bandwidth-gbs", type=float, help="GPU: memory bandwidth, GB/s")
    ap.add_argument("--gpu-reps", type=int, default=10)
    ap.add_argument("--gpu-prefix-tokens", type=int, default=8192)
    ap.add_argument("--gpu-out-tokens", type=int, default=300)
    ap.add_argument(
        "--gpu-dry-run",
        action="store_true",
        help="run the GPU section's code on CPU with a tiny shape (checks it, measures nothing)",
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    device = torch.device(
        ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    )
    on_gpu = device.type == "cuda"
    quick = args.quick
    shape = QUICK_SHAPE if quick else (QWEN25_3B if on_gpu else CPU_SHAPE)
    prefix_tokens = args.prefix_tokens or (256 if quick else 8192 if on_gpu else 4096)
    out_tokens = args.out_tokens or (8 if quick else 300 if on_gpu else 32)
    reps = args.reps or (2 if quick else 3)
    dtype = torch.bfloat16 if on_gpu else torch.float32

    report: dict[str, Any] = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(["bench/run.py", *(argv if argv is not None else sys.argv[1:])]),
        "quick": quick,
        "machine": machine(),
    }
    m = report["machine"]
    print(
        f"machine: {m['cpu']} ({m['cpu_cores']} cores, torch {m['torch_threads']} threads)"
        + (f", GPU {m['gpu']}" if m.get("gpu") else ", no GPU")
    )

    t0 = time.perf_counter()
    pr = bench_prefix(shape, prefix_tokens, out_tokens, 5, 5, reps, device, dtype)
    report["shared_prefix"] = pr
    print_prefix(pr)

    if not args.skip_cross_session:
        cr = cross_session(shape, prefix_tokens, out_tokens, 5, 5, args.sessions, reps, device)
        report["cross_session"] = cr
        print_cross_session(cr)

    if not args.skip_daemon:
        b, _, _ = backends(QUICK_SHAPE, torch.device("cpu"), torch.float32)
        dr = bench_daemon(Engine(b, EngineConfig(max_new_tokens=8)), quick)
        report["daemon"] = dr
        print_daemon(dr)

    if args.gpu_dry_run:
        gr = bench_gpu(DRY_RUN_SHAPE, 128, 4, 5, 5, 2, torch.device("cpu"), (1.0, 100.0))
        gr["dry_run"] = True
        report["gpu"] = gr
        print(
            "\n(GPU section dry run on CPU, tiny shape: checks the code, the figures mean nothing)"
        )
        print_gpu(gr)
    elif args.gpu:
        if not torch.cuda.is_available():
            msg = "skipped: CUDA is not available on this machine (the GPU section needs one)"
            report["gpu"] = {"skipped": msg}
            print(f"\n== GPU step scoring: {msg}")
        else:
            dev = torch.device("cuda")
            name = torch.cuda.get_device_name(dev)
            peak = gpu_peaks(name)
            if args.peak_tflops and args.bandwidth_gbs:
                peak = (args.peak_tflops, args.bandwidth_gbs)
            gr = bench_gpu(
                QWEN25_3B,
                args.gpu_prefix_tokens,
                args.gpu_out_tokens,
                5,
                5,
                args.gpu_reps,
                dev,
                peak,
            )
            report["gpu"] = gr
            print_gpu(gr)
    report["elapsed_s"] = time.perf_counter() - t0
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    print(f"\nwrote {args.json} ({report['elapsed_s']:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
