"""``webshepherd demo --trap``: the trained tiny judge as tree search's value function.

The trap shop lists a sold-out cable as the cheapest; clicking it looks right from the results.
Step-by-step best-of-n with the project's trained tiny judge (fixed seed and steps: the same on
every machine) takes it and is stuck on its page. Tree search getting out of the trap is tested
with a scripted judge (tests/protocol/agents/test_tree.py): the trained tiny judge does not yet
rate the decoy's page low enough for the search to leave it (issue 28's notes).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.demo_cli import DEMO, demo_env, run_demo

pytestmark = pytest.mark.model


def trap_run(tiny_model_path: Path, tmp_path: Path, paradigm: str) -> tuple[dict, str]:
    out = tmp_path / paradigm
    args = [*DEMO, "--trap", "--paradigm", paradigm, "--samples", "1", "--out", str(out)]
    result = run_demo(args, demo_env(tmp_path, tiny_model_path), timeout=600)
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
    return json.loads((out / "summary.json").read_text("utf-8")), result.stdout


def test_step_by_step_best_of_n_falls_into_the_trap(tiny_model_path: Path, tmp_path: Path) -> None:
    summary, stdout = trap_run(tiny_model_path, tmp_path, "step")
    assert summary["outcome"] == "failure" and summary["orders"] == []
    assert "tree" not in summary
    urls = [s["url"] for s in summary["steps"]]
    assert any("/product/d1" in u for u in urls)  # it took the decoy and stayed
    assert not any("/product/c2" in u for u in urls)
    assert "failure" in stdout
