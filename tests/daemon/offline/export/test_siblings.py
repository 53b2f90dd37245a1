"""A recorded tree search's siblings become preference pairs in the WebPRM and TRL exports:
ground truth (the environment's labels) decides chosen and rejected, whatever the judge's
rewards say; the trajectory of a step is the tree's path to it.

Plumbing tests: a real daemon on loopback with a scripted judge (tests/fixtures/
scripted_judge.py) whose values lead the search into the trap shop's sold-out decoy first
(test_tree.py's values), the real tree search and shop, real SQLite; nothing here depends
on what a model writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.demo.agent import ShopPolicy
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.text_env import TextEnvironment
from webshepherd.daemon.engine.prompts import format_trajectory
from webshepherd.daemon.offline.export.llamafactory import sft_rows
from webshepherd.daemon.offline.export.sessions import Summary
from webshepherd.daemon.offline.export.trl import trl_preference_rows, trl_prm_rows
from webshepherd.daemon.offline.export.webprm import webprm_rows
from webshepherd.daemon.recorder import History
from webshepherd.protocol.agents import EpisodeOptions, EpisodeResult, SearchTree, run_episode
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.common import Turn

from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.scripted_judge import NO_GUARDS, ScriptedJudge, scripted_daemon
from tests.protocol.agents.test_tree import LOW, SHOP, trap_values

Items = list[Literal["yes", "in_progress", "no"]]
OPENED: Items = ["yes", "yes", "no", "no"]  # searched, and the cheapest product open
SEARCHED: Items = ["yes", "no", "no", "no"]  # searched, nothing of the rest
CARTED: Items = ["yes", "yes", "yes", "no"]


@pytest.fixture
def shop() -> Iterator[ShopServer]:
    with ShopServer(variant=SHOP) as server:
        yield server


def _export(tmp_path: Path, make: Any) -> tuple[list[dict[str, Any]], Summary]:
    history = History.open(tmp_path / "data" / DB_NAME)
    summary = Summary()
    try:
        rows = list(make(history, history.sessions(), summary=summary))
    finally:
        history.close()
    return rows, summary


async def _run(c: AsyncClient, shop: ShopServer, **kw: Any) -> EpisodeResult:
    shop.use(SHOP)
    opts = dict(reward_samples=1, approval="never", checklist=SHOP.checklist, max_steps=10)
    return await run_episode(
        c,
        TextEnvironment(shop.url, on_reset=lambda: shop.use(SHOP)),
        ShopPolicy(seed=1, bad_per_step=8, shop=SHOP, backtrack=False),
        SHOP.intent,
        EpisodeOptions(paradigm="tree", **{**opts, **kw}),
    )


def _actions(tree: SearchTree, ids: list[int]) -> list[str]:
    return [a for a in (tree.node(i).action for i in ids) if a is not None]


async def test_truth_decides_the_sibling_pairs_of_a_recorded_tree(
    tmp_path: Path, shop: ShopServer
) -> None:
    judge = ScriptedJudge(trap_values(shop), default=LOW)
    async with (
        scripted_daemon(tmp_path, judge, guards=NO_GUARDS) as server,
        AsyncClient(server.url, TEST_TOKEN) as c,
    ):
        plain = await _run(c, shop, branching=8)  # the same search twice; this one unlabelled
        result = await _run(c, shop, branching=8)
        t = result.tree
        assert result.outcome == plain.outcome == "success" and t is not None
        assert plain.tree is not None and plain.tree.path == t.path
        decoy = next(n for n in t.nodes if n.url and "/product/d1" in n.url)
        results = t.node(decoy.parent or 0)  # the results page: its children are siblings
        target = next(n for n in t.children(results.node) if n.node in t.path)
        others = [n for n in t.children(results.node) if n.node not in (decoy.node, target.node)]
        assert decoy.reward is not None and target.reward is not None
        assert decoy.reward > target.reward  # the judge preferred the decoy
        step, after = (
            results.expanded_at,
            target.expanded_at,
        )  # the results page's, the target page's
        assert step is not None and after is not None
        for node, items in ((target, OPENED), (decoy, SEARCHED), (others[0], SEARCHED)):
            await c.label(result.session_id, step, node.action or "", items)
        cart = next(n for n in t.children(target.node) if n.node in t.path)
        await c.label(result.session_id, after, cart.action or "", CARTED)
    path = _actions(t, t.path)
    upto = t.path[: t.path.index(cart.node)]  # the nodes the target page's step follows

    rows, _ = _export(tmp_path, webprm_rows)
    by_step = {r["step_id"]: r for r in rows if r["task_id"] == result.session_id}
    # without labels nothing is known wrong: no pairs, unless the judge's are asked for
    assert not [r for r in rows if r["task_id"] == plain.session_id]
    judged, _ = _export(tmp_path, lambda *a, **k: webprm_rows(*a, **k, include_judged=True))
    unlabelled = {r["step_id"]: r for r in judged if r["task_id"] == plain.session_id}
    # then the kept sibling is chosen, and the judge's preference for the decoy keeps it out
    # of the rejected (only clear negatives it scored lower are), each marked judge
    assert unlabelled[str(step)]["chosen"]["action"] == target.action
    assert unlabelled[str(step)]["chosen_source"] == "outcome"
    assert decoy.action not in [r["action"] for r in unlabelled[str(step)]["rejected"]]
    assert set(unlabelled[str(step)]["rejected_source"]) == {"judge"}
    # with labels, truth's pairs, the decoy among them
    row = by_step[str(step)]
    assert row["chosen"]["action"] == target.action and row["chosen_source"] == "label"
    assert [r["action"] for r in row["rejected"]] == [decoy.action, others[0].action]
    assert row["rejected_source"] == ["label", "label"]
    # the trajectory is the tree's path, without the decoy the search ran and left
    assert str(after) not in by_step  # one labelled sibling there: nothing known wrong
    asked = {r["step_id"]: r for r in judged if r["task_id"] == result.session_id}
    assert asked[str(after)]["action_history"] == _actions(t, upto)
    assert str(decoy.expanded_at) not in by_step  # the decoy's page: nothing kept there, no truth

    prefs, _ = _export(tmp_path, trl_preference_rows)
    pairs = [p for p in prefs if p["task_id"] == result.session_id and p["step_id"] == step]
    pair = next(p for p in pairs if p["rejected"][0]["content"].endswith(f"{decoy.action}"))
    assert pair["chosen"][0]["content"].endswith(f"Action: {target.action}")
    assert (pair["chosen_source"], pair["rejected_source"]) == ("label", "label")
    assert pair["chosen_reward"] == target.reward and pair["rejected_reward"] == decoy.reward
    assert pair["chosen_reward"] < pair["rejected_reward"]  # truth decided, not the judge
    assert {p["rejected_source"] for p in pairs} == {"label"}

    prm, _ = _export(tmp_path, trl_prm_rows)
    full = next(r for r in prm if r["task_id"] == result.session_id)
    # one run of chosen steps: the path, across the decoy's abandoned step
    assert all(full["labels"]) and full["first_step"] == t.node(0).expanded_at
    assert [c.split("\nAction: ")[1] for c in full["completions"]] == path

    sft, _ = _export(tmp_path, sft_rows)
    judged = next(r for r in sft if r["task_id"] == result.session_id and r["step_id"] == after)
    prompt = judged["conversations"][0]["value"]
    turns = [Turn(t.node(i).thought or "", t.node(i).action or "") for i in upto[1:]]
    assert format_trajectory(turns) in prompt and (decoy.thought or "") not in prompt
    assert "completes Checklist 3." in judged["conversations"][1]["value"]


async def test_truth_pairs_siblings_of_a_search_that_failed(
    tmp_path: Path, shop: ShopServer
) -> None:
    judge = ScriptedJudge(trap_values(shop), default=LOW)
    async with (
        scripted_daemon(tmp_path, judge, guards=NO_GUARDS) as server,
        AsyncClient(server.url, TEST_TOKEN) as c,
    ):
        plain = await _run(c, shop, max_expansions=2)  # the same search twice; this one unlabelled
        result = await _run(c, shop, max_expansions=2)
        t = result.tree
        assert result.outcome == plain.outcome == "failure" and t is not None
        root = t.node(0).expanded_at
        assert root is not None
        good, bad, same = sorted(t.children(0), key=lambda n: -(n.reward or 0.0))[:3]
        nothing: Items = ["no", "no", "no", "no"]
        typed: Items = ["in_progress", "no", "no", "no"]
        for node, items in ((good, typed), (bad, nothing), (same, nothing)):
            await c.label(result.session_id, root, node.action or "", items)
    rows, summary = _export(tmp_path, webprm_rows)
    # a failed session has no trustworthy chosen action, unless truth orders its siblings
    assert summary.per_session[plain.session_id] == 0
    assert [r["step_id"] for r in rows] == [str(root)]
    assert rows[0]["chosen"]["action"] == good.action
    assert {r["action"] for r in rows[0]["rejected"][:2]} == {bad.action, same.action}
    prefs, _ = _export(tmp_path, trl_preference_rows)
    assert {p["rejected_source"] for p in prefs if bad.action in p["rejected"][0]["content"]} == {
        "label"
    }
