"""``bench/report.py`` end to end on a short session: it records, renders and prints its
figures (no timing assertions)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.model


def test_report_bench_prints_its_figures(tmp_path, tiny_model_path):
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "report.py"),
            "--steps",
            "3",
            "--repeats",
            "2",
            "--json",
            str(out),
            "--screenshot",
            str(tmp_path / "top.png"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "WEBSHEPHERD_TINY_MODEL": str(tiny_model_path)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads(out.read_text())
    assert figures["steps"] == 3 and len(figures["generation_s_all"]) == 2
    assert figures["screenshot_bytes"] < figures["report_bytes"]
    assert "report of 3 steps" in proc.stdout
    assert (tmp_path / "top.png").read_bytes()[:4] == b"\x89PNG"
