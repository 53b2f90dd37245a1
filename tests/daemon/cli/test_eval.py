"""``webshepherd eval rewardbench`` from the command line: the summary's labelled rows, the
baseline prompts' defaults, and flags that only apply in process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.daemon.offline.evaluation.test_rewardbench import row

WEBSHEPHERD = [sys.executable, "-m", "webshepherd.daemon.cli"]


def _run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"}
    env["WEBSHEPHERD_CONFIG_DIR"] = str(tmp_path / "config")
    return subprocess.run(
        [*WEBSHEPHERD, *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )


def _data(tmp_path: Path) -> Path:
    data = tmp_path / "bench.jsonl"
    rows = [row("t1", 0), row("w1", 0, source="webarena")]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def test_prompt_and_drop_apply_in_process_only(tmp_path: Path) -> None:
    data = _data(tmp_path)
    for flags in (["--prompt", "baseline"], ["--long-prompts", "drop"]):
        args = ["eval", "rewardbench", "--data", str(data), "--url", "ws://127.0.0.1:9"]
        out = _run([*args, *flags, "--json", str(tmp_path / "r.json")], tmp_path)
        assert out.returncode != 0 and "apply to --model" in out.stderr, out.stderr


@pytest.mark.model
def test_the_summary_labels_subsets_headline_and_pooled_rows(
    tiny_model_path: Path, tmp_path: Path
) -> None:
    """The summary's rows named for what they are; the settings kept in the report. (The tiny
    model's 2048-token context cannot hold the baseline prompts; the rewards are its own.)"""
    report = tmp_path / "r.json"
    args = ["eval", "rewardbench", "--data", str(_data(tmp_path)), "--model"]
    args += [str(tiny_model_path), "--device", "cpu", "--samples", "1"]
    out = _run([*args, "--max-new-tokens", "4", "--json", str(report), "--quiet"], tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    names = [ln[:34].strip() for ln in lines[1:]]
    assert names == [
        "mind2web (3 splits' rows)",
        "mind2web_test_task",
        "webarena",
        "mean of subsets (headline)",
        "pooled rows",
    ]
    saved = json.loads(report.read_text())
    assert saved["samples"] == 1 and saved["settings"]["prompt"] == "web-shepherd"
    assert saved["settings"]["sampling"]["top_k"] is None  # the tiny model's file sets none


def test_baseline_prompts_default_to_one_sample_as_the_authors_runs() -> None:
    from webshepherd.daemon.cli.eval import default_samples

    assert default_samples("web-shepherd") == 5
    assert default_samples("baseline") == default_samples("baseline-likert") == 1
