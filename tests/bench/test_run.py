"""``bench/run.py --quick`` end to end, as a subprocess: every figure lands in the JSON file.

No timing assertions: the figures are whatever this machine gives.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.model


def finite(x: object) -> bool:
    return isinstance(x, int | float) and math.isfinite(x) and x > 0


def run_bench(
    args: list[str], out: Path, tiny_model_path: Path
) -> subprocess.CompletedProcess[str]:
    """``bench/run.py ARGS --json OUT`` on the tiny model; fails the test on a non-zero exit."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), *args, "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "WEBSHEPHERD_TINY_MODEL": str(tiny_model_path)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_quick_run_writes_every_figure(tmp_path: Path, tiny_model_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = run_bench(["--quick", "--gpu-dry-run", "--device", "cpu"], out, tiny_model_path)
    assert "shared prefix vs each candidate alone" in proc.stdout
    report = json.loads(out.read_text("utf-8"))
    assert report["quick"] is True
    assert report["machine"]["cpu_cores"]

    pr = report["shared_prefix"]
    assert (pr["k"], pr["n"]) == (5, 5)
    modes = pr["modes"]
    assert modes["shared"]["prefix_shared"] is True
    assert modes["unshared"]["prefix_shared"] is False
    # a fixed output length: every one of the K x n rows generated exactly output_tokens
    for m in modes.values():
        assert m["generated_tokens"] == 25 * pr["output_tokens"]
        assert finite(m["wall_s_median"])
    # sharing prefills the prefix once instead of K times
    assert modes["unshared"]["prefilled_tokens"] == modes["alone"]["prefilled_tokens"]
    saved = modes["unshared"]["prefilled_tokens"] - modes["shared"]["prefilled_tokens"]
    # (the prefix's last token may re-tokenize into the suffixes: the boundary slack)
    assert 4 * (pr["prefix_tokens"] - 1) <= saved <= 4 * pr["prefix_tokens"]
    for name in ("unshared", "alone"):
        assert pr[f"prefill_ratio_{name}_vs_shared"] > 1
        assert finite(pr[f"wall_ratio_{name}_vs_shared"])
        assert finite(pr[f"first_token_ratio_{name}_vs_shared"])

    # the prefix kept once (split attention) and repeated per row: the same token counts
    assert modes["shared_copies"]["prefix_shared"] is True
    assert modes["shared_copies"]["prefilled_tokens"] == modes["shared"]["prefilled_tokens"]
    assert finite(pr["wall_ratio_shared_copies_vs_shared"])

    cs = report["cross_session"]
    assert (cs["sessions"], cs["k"], cs["n"]) == (4, 5, 5)
    batched, single = cs["modes"]["batched"], cs["modes"]["one_at_a_time"]
    assert batched["batch_sessions"] == 4 and single["batch_sessions"] == 1
    assert batched["largest_call"] >= 2  # requests did share a model call (the first may not)
    assert single["largest_call"] == 1
    for m in (batched, single):
        assert len(m["wall_s"]) == cs["reps"] and finite(m["steps_per_s"])
    assert finite(cs["speedup_batched_vs_one_at_a_time"])

    d = report["daemon"]
    assert d["observe_tree_bytes"] == 200_000
    assert finite(d["latency_ms_p50"]) and d["latency_ms_p99"] >= d["latency_ms_p50"]
    assert d["throughput_clients"] == 50
    assert d["throughput_messages"] > 0 and finite(d["throughput_msgs_per_s"])

    g = report["gpu"]
    assert g["dry_run"] is True
    assert finite(g["latency_s_p50"]) and g["latency_s_p95"] >= g["latency_s_p50"]
    assert finite(g["floor"]["floor_total_s"])


def test_gpu_section_skips_clearly_without_cuda(tmp_path: Path, tiny_model_path: Path) -> None:
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA present: the GPU section would run, not skip")
    out = tmp_path / "bench.json"
    proc = run_bench(
        [
            "--quick",
            "--skip-daemon",
            "--skip-cross-session",
            "--gpu",
            "--prefix-tokens",
            "64",
            "--out-tokens",
            "2",
            "--reps",
            "1",
        ],
        out,
        tiny_model_path,
    )
    assert "CUDA is not available" in proc.stdout
    assert "skipped" in json.loads(out.read_text("utf-8"))["gpu"]
