"""``webshepherd demo --trap``: the trained tiny judge as tree search's value function.

The trap shop lists a sold-out cable as the cheapest; the judge rates clicking it highest (from
the results nobody can tell) and, having seen sold-out pages in training, rates everything on
its page below the unexplored sibling. Step-by-step best-of-n is stuck there; tree search
resets, replays the search and orders the real cheapest cable. The judge is the project's
trained tiny judge (fixed seed and steps: the same on every machine).
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


def test_tree_search_backtracks_out_of_the_trap(tiny_model_path: Path, tmp_path: Path) -> None:
    summary, stdout = trap_run(tiny_model_path, tmp_path, "tree")
    assert summary["outcome"] == "success", stdout
    assert summary["orders"] == [["Basic USB-C cable, 1 m"]]
    tree = summary["tree"]
    nodes = {n["id"]: n for n in tree["nodes"]}
    decoy = [n for n in nodes.values() if n["url"] and "/product/d1" in n["url"]]
    assert decoy and all(n["executed"] and n["id"] not in tree["path"] for n in decoy)
    for n in decoy:  # the decoy looked best, everything on its page scored lower than that
        kids = [k for k in nodes.values() if k["parent"] == n["id"]]
        assert kids and max(k["reward"] for k in kids) < n["reward"]
    assert tree["resets"] >= 1 and any(nodes[i]["replayed"] for i in tree["path"])
    assert tree["stop"] == "answer" and summary["answer"].startswith("Order VW-")
    assert [s["action"] for s in summary["steps"]] == [nodes[i]["action"] for i in tree["path"][1:]]
    assert summary["model_calls"] == tree["model_calls"] > 0
    assert "success" in stdout and "(replayed)" in stdout


def test_step_by_step_best_of_n_falls_into_the_trap(tiny_model_path: Path, tmp_path: Path) -> None:
    summary, stdout = trap_run(tiny_model_path, tmp_path, "step")
    assert summary["outcome"] == "failure" and summary["orders"] == []
    assert "tree" not in summary
    urls = [s["url"] for s in summary["steps"]]
    assert any("/product/d1" in u for u in urls)  # it took the decoy and stayed
    assert not any("/product/c2" in u for u in urls)
    assert "failure" in stdout
