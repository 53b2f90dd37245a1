"""``webshepherd demo --trap``: the shipped tiny judge as tree search's value function.

The trap shop lists a sold-out cable as the cheapest; the scripted policy adds to the cart
only the cheapest listed product it has not seen sold out, and proposes no way back. These
tests run the real demo (in-process daemon, the judge that ships, one sample per candidate)
and check the outcome the issue asks for: tree search orders the right cable, step-by-step
best-of-n does not. What they lean on is the judge's own ranking (bench/README.md, *The tiny
judge*, has its figures); the search's plumbing is tested with a scripted judge in
tests/protocol/agents/test_tree.py.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from webshepherd.daemon.demo.trap import BRANCHING, TrapOptions

from tests.fixtures.demo_cli import DEMO, demo_env, run_demo

pytestmark = pytest.mark.model

TARGET = "Basic USB-C cable, 1 m"


def trap(paradigm: str, tiny_model_path: Path, tmp_path: Path) -> dict[str, Any]:
    out_dir = tmp_path / paradigm
    args = [*DEMO, "--trap", "--paradigm", paradigm, "--out", str(out_dir)]
    result = run_demo(args, demo_env(tmp_path, tiny_model_path), timeout=500)
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
    summary: dict[str, Any] = json.loads((out_dir / "summary.json").read_text("utf-8"))
    assert summary["demo"] == "trap" and summary["paradigm"] == paradigm
    assert summary["target"] == TARGET
    return summary


def test_tree_search_leaves_the_trap_and_orders_the_cheapest_cable(
    tiny_model_path: Path, tmp_path: Path
) -> None:
    s = trap("tree", tiny_model_path, tmp_path)
    assert s["outcome"] == "success", s["orders"]
    assert s["orders"] == [[TARGET]]
    tree = s["tree"]
    assert tree["stop"] == "answer" and tree["resets"] >= 1
    nodes = {n["id"]: n for n in tree["nodes"]}
    # the decoy's page was tried, found a dead end, and left for another branch
    decoy = [n for n in nodes.values() if n["executed"] and "/product/d1" in (n["url"] or "")]
    assert decoy and all(n["id"] not in tree["path"] for n in decoy)
    # the returned path runs root first, parent to child, and ends in the final answer
    path = [nodes[i] for i in tree["path"]]
    assert path[0]["parent"] is None
    assert all(b["parent"] == a["id"] for a, b in itertools.pairwise(path))
    assert path[-1]["action"].startswith("send_msg_to_user(") and path[-1]["status"] == "done"
    assert any(n["replayed"] for n in path)  # it went back: the prefix was replayed
    # the judge's values rise along the path to the order (checklist progress)
    rewards = [n["reward"] for n in path[1:-1]]
    assert rewards[0] < 0.2 and rewards[-1] > 0.9, rewards
    assert s["model_calls"] == tree["model_calls"] <= BRANCHING * TrapOptions().max_expansions


def test_step_by_step_best_of_n_does_not_order(tiny_model_path: Path, tmp_path: Path) -> None:
    s = trap("step", tiny_model_path, tmp_path)
    assert s["outcome"] == "failure" and s["orders"] == []
    assert "tree" not in s
    urls = [st["url"] for st in s["steps"]]
    # it reached a product page and never got past it: no cart, no checkout
    assert any("/product/" in u for u in urls)
    assert not any("/checkout" in u or "/cart" in u for u in urls)
