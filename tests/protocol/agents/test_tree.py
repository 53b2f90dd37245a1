"""Tree search (paradigm "tree"): best-first over states, backtracking by reset and replay.

Plumbing tests: the judge is scripted (tests/fixtures/scripted_judge.py) with values that
make the trap shop's sold-out decoy look best in the results and everything on its page
worse than the unexplored sibling; what the tiny judge itself does is in
tests/daemon/demo/test_trap.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from webshepherd.daemon.demo.agent import ShopAgent, ShopPolicy, elements
from webshepherd.daemon.demo.browser import Browser
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.text_env import TextEnvironment
from webshepherd.daemon.demo.variants import trap_variant
from webshepherd.protocol.agents import EpisodeOptions, run_episode
from webshepherd.protocol.agents.tree import ResetUnsupported, SearchNode, TreeSearch
from webshepherd.protocol.client import AsyncClient
from websockets.asyncio.client import connect

from tests.fixtures.daemon import TEST_TOKEN, WsClient, hello, pairing_code
from tests.fixtures.scripted_judge import NO_GUARDS, ScriptedJudge, Table, scripted_daemon

SHOP = trap_variant()
LOW = (0.25, (2, 0, 0, 0), "only the search is done")


@pytest.fixture
def shop() -> Iterator[ShopServer]:
    with ShopServer(variant=SHOP) as server:
        yield server


def trap_values(server: ShopServer) -> Table:
    """Rising values along the way to the order; the decoy's click looks best of all in the
    results, the target's next best; everything else (the decoy's page) is LOW."""
    browser, agent = Browser(), ShopAgent(shop=SHOP)
    browser.goto(server.url)
    table: Table = {}
    value = 0.3
    for _ in range(14):
        obs = browser.observe()
        good = agent.good(obs.url, obs.axtree)
        if "sold out" not in good.thought:  # going back is the search's job, not the policy's
            decoy = "'Lumo USB-C cable, 1 m'" in good.thought
            table[(obs.url, good.action)] = (value + 0.1 if decoy else value, (2, 1, 0, 0), "")
            value += 0.05 if decoy else 0.08
        if agent.done(obs.url):
            break
        browser.act(good.action)
    server.use(SHOP)
    return table


def options(paradigm: str, **kw: object) -> EpisodeOptions:
    base = dict(reward_samples=1, approval="never", checklist=SHOP.checklist, max_steps=10)
    return EpisodeOptions(paradigm=paradigm, **{**base, **kw})


async def test_tree_search_backtracks_from_the_trap_and_step_by_step_does_not(
    tmp_path: Path, shop: ShopServer
) -> None:
    judge = ScriptedJudge(trap_values(shop), default=LOW)
    policy = dict(bad_per_step=8, shop=SHOP, backtrack=False)
    async with (
        scripted_daemon(tmp_path, judge, guards=NO_GUARDS) as server,
        AsyncClient(server.url, TEST_TOKEN) as c,
    ):
        step = await run_episode(
            c, TextEnvironment(shop.url, on_reset=lambda: shop.use(SHOP)),
            ShopPolicy(seed=1, **policy), SHOP.intent, options("step", top_n=8),
        )  # fmt: skip
        assert step.outcome == "failure" and not shop.state.orders
        assert any("/product/d1" in s.url for s in step.steps)  # it went down the trap
        shop.use(SHOP)
        tree = await run_episode(
            c, TextEnvironment(shop.url, on_reset=lambda: shop.use(SHOP)),
            ShopPolicy(seed=1, **policy), SHOP.intent, options("tree", branching=8),
        )  # fmt: skip
        recorded = await c.session(tree.session_id)
    assert tree.outcome == "success" and tree.answer is not None
    assert shop.state.orders[-1]["items"] == [SHOP.target()["name"]]
    t = tree.tree
    assert t is not None and tree.stopped == "answer" and t.resets >= 1
    decoy = next(n for n in t.nodes if n.url and "/product/d1" in n.url)
    assert decoy.executed and decoy.status == "expanded" and decoy.node not in t.path
    assert all(c.reward is not None and c.reward < 0.5 for c in t.children(decoy.node))
    # the path to the order replayed the search after the trap, then went on first-hand
    on_path = [t.node(i) for i in t.path[1:]]
    assert [n.replays for n in on_path[:2]] == [1, 1] and all(n.executed for n in on_path)
    assert on_path[2].action is not None and "/product/c2" in (on_path[2].url or "")
    assert on_path[-1].action is not None and on_path[-1].action.startswith("send_msg_to_user")
    assert t.expansions == sum(n.expanded_at is not None for n in t.nodes)
    assert t.model_calls == sum(n.parent is not None for n in t.nodes)  # one sample each
    # the path is the episode's steps: what the planning metrics and exports read
    assert [s.chosen.action for s in tree.steps if s.chosen] == [n.action for n in on_path]
    assert [s.reward for s in tree.steps] == [n.reward for n in on_path]
    assert recorded.session.agent.planning == "tree" and recorded.session.outcome == "success"


async def _person(server, decision: str) -> tuple[WsClient, list[dict], asyncio.Task]:
    """A paired monitor that answers every approval request with ``decision``."""
    ws = WsClient(await connect(server.url, max_size=None))
    assert (await ws.request(hello("monitor", "person")))["type"] == "welcome"
    code = pairing_code(server.config.config_dir, "monitor")
    paired = await ws.request({"type": "pair", "code": code, "name": "person"})
    assert paired["type"] == "paired", paired
    asked: list[dict] = []

    async def answer() -> None:
        while True:
            req = await ws.wait_for("approval.request", timeout=300)
            asked.append(req)
            msg = {"type": "approval.decide", "request_id": req["request_id"]}
            await ws.request({**msg, "decision": decision})

    return ws, asked, asyncio.create_task(answer())


@pytest.mark.parametrize("decision", ["approve", "reject"])
async def test_a_guarded_node_runs_only_once_a_person_approved_it(
    tmp_path: Path, shop: ShopServer, decision: str
) -> None:
    """The guards on (as `serve` has them): tree search runs "Add to cart" and "Place order"
    (POST forms) only after a paired person approved that node; rejected, they never run."""
    judge = ScriptedJudge(trap_values(shop), default=LOW)
    policy = ShopPolicy(seed=1, bad_per_step=8, shop=SHOP, backtrack=False)
    env = TextEnvironment(shop.url, on_reset=lambda: shop.use(SHOP))
    async with scripted_daemon(tmp_path, judge) as server:
        ws, asked, answering = await _person(server, decision)
        try:
            async with AsyncClient(server.url, TEST_TOKEN) as c:
                result = await run_episode(
                    c, env, policy, SHOP.intent, options("tree", branching=8)
                )
        finally:
            answering.cancel()
            await ws.close()
    t = result.tree
    assert t is not None and asked
    assert all(r["reason"] == "guarded" and r["guard"] for r in asked)
    asked_actions = {r["candidate"]["action"] for r in asked}
    guarded_runs = [n for n in t.nodes if n.guarded and n.executed]
    if decision == "approve":
        assert result.outcome == "success"
        assert shop.state.orders[-1]["items"] == [SHOP.target()["name"]]
        assert guarded_runs and all(n.approved for n in guarded_runs)
        assert {n.action for n in guarded_runs} <= asked_actions
    else:
        assert result.outcome == "failure" and not shop.state.orders
        assert not guarded_runs
        refused = [n for n in t.nodes if n.guarded and n.status == "failed"]
        assert refused and all(
            "not run: refused by " in (n.error or "") and "monitor:person" in (n.error or "")
            for n in refused
        )


def in_place_on_the_decoy(server: ShopServer, value: float) -> Table:
    """``value`` for the actions that leave the decoy's page as it is (a scroll, a click on
    its title): a judge that likes lingering there."""
    browser, agent = Browser(), ShopAgent(shop=SHOP)
    browser.goto(server.url)
    while "/product/" not in browser.observe().url:
        obs = browser.observe()
        browser.act(agent.good(obs.url, obs.axtree).action)
    obs = browser.observe()
    assert "/product/d1" in obs.url
    title = next(e for e in elements(obs.axtree) if e.role == "heading")
    server.use(SHOP)
    return {
        (obs.url, a): (value, (2, 1, 0, 0), "") for a in ("scroll(0, 400)", f"click('{title.bid}')")
    }


async def test_an_action_that_leaves_the_page_as_it_was_is_not_expanded(
    tmp_path: Path, shop: ShopServer
) -> None:
    """The judge values lingering on the decoy's page above everything: each such action
    runs once and stays a leaf (its children would be its parent's again), and the search
    goes on to order the target within a budget that chains of scrolls would spend."""
    judge = ScriptedJudge({**trap_values(shop), **in_place_on_the_decoy(shop, 0.95)}, default=LOW)
    async with (
        scripted_daemon(tmp_path, judge, guards=NO_GUARDS) as server,
        AsyncClient(server.url, TEST_TOKEN) as c,
    ):
        tree = await run_episode(
            c, TextEnvironment(shop.url, on_reset=lambda: shop.use(SHOP)),
            ShopPolicy(seed=1, bad_per_step=8, shop=SHOP, backtrack=False), SHOP.intent,
            options("tree", branching=8, max_expansions=10),
        )  # fmt: skip
    assert tree.outcome == "success", tree.stopped
    assert shop.state.orders[-1]["items"] == [SHOP.target()["name"]]
    t = tree.tree
    assert t is not None
    decoy = next(n for n in t.nodes if n.url and "/product/d1" in n.url and n.expanded_at)
    lingered = [n for n in t.children(decoy.node) if n.reward == 0.95]
    assert len(lingered) == 2
    for n in lingered:  # run, on the same page, and never expanded
        assert n.executed and n.status == "leaf" and n.url == decoy.url
        assert n.expanded_at is None and not t.children(n.node)


async def test_budgets_stop_the_search_with_the_best_path_found(
    tmp_path: Path, shop: ShopServer
) -> None:
    judge = ScriptedJudge(trap_values(shop), default=LOW)
    policy = ShopPolicy(seed=1, bad_per_step=8, shop=SHOP, backtrack=False)
    env = TextEnvironment(shop.url, on_reset=lambda: shop.use(SHOP))
    async with (
        scripted_daemon(tmp_path, judge, guards=NO_GUARDS) as server,
        AsyncClient(server.url, TEST_TOKEN) as c,
    ):
        few = await run_episode(c, env, policy, SHOP.intent, options("tree", max_expansions=3))
        shop.use(SHOP)
        env = TextEnvironment(shop.url, on_reset=lambda: shop.use(SHOP))
        calls = await run_episode(
            c, env, ShopPolicy(seed=1, bad_per_step=8, shop=SHOP, backtrack=False), SHOP.intent,
            options("tree", branching=3, max_model_calls=7),
        )  # fmt: skip
        shop.use(SHOP)
        shallow = await run_episode(
            c, TextEnvironment(shop.url, on_reset=lambda: shop.use(SHOP)),
            ShopPolicy(seed=1, bad_per_step=8, shop=SHOP, backtrack=False), SHOP.intent,
            options("tree", max_depth=2, max_expansions=6),
        )  # fmt: skip
    assert few.outcome == "failure" and few.stopped == "expansions"
    assert few.tree is not None and few.tree.expansions == 3
    assert len(few.steps) == 2  # the deepest best node: the search ran
    assert calls.stopped == "model_calls" and calls.tree is not None
    assert calls.tree.model_calls <= 7 and calls.tree.expansions == 2
    assert shallow.tree is not None
    assert max(n.depth for n in shallow.tree.nodes if n.executed) <= 2
    assert {n.status for n in shallow.tree.nodes if n.depth == 2 and n.executed} <= {"leaf"}


class _Drifting(TextEnvironment):
    """A site that is not the same after a reset: the replay lands elsewhere."""

    async def reset(self) -> None:
        self.start_url: str = self.start_url.split("?")[0] + "?drift=1"  # same page, new URL
        await super().reset()


class _NoReset:
    def __init__(self, env: TextEnvironment) -> None:
        self.env = env

    async def observe(self):
        return await self.env.observe()

    async def execute(self, action: str):
        return await self.env.execute(action)


async def test_a_replay_that_diverges_marks_the_node_stale(
    tmp_path: Path, shop: ShopServer
) -> None:
    judge = ScriptedJudge(trap_values(shop), default=LOW)
    policy = ShopPolicy(seed=1, bad_per_step=8, shop=SHOP, backtrack=False)
    env = _Drifting(shop.url, on_reset=lambda: shop.use(SHOP))
    async with (
        scripted_daemon(tmp_path, judge, guards=NO_GUARDS) as server,
        AsyncClient(server.url, TEST_TOKEN) as c,
    ):
        result = await run_episode(c, env, policy, SHOP.intent, options("tree", max_expansions=8))
        with pytest.raises(ResetUnsupported, match="reset"):
            shop.use(SHOP)
            await run_episode(
                c, _NoReset(TextEnvironment(shop.url)),
                ShopPolicy(seed=1, bad_per_step=8, shop=SHOP, backtrack=False), SHOP.intent,
                options("tree", max_expansions=8),
            )  # fmt: skip
    assert result.tree is not None and result.tree.resets >= 1
    stale = [n for n in result.tree.nodes if n.status == "stale"]
    assert stale and any("replay diverged" in (n.error or "") for n in stale)
    ids = {n.node for n in stale}
    assert all(n.parent in ids for n in stale if "diverged" not in (n.error or ""))
    assert result.outcome == "failure"


def test_tree_options_are_checked() -> None:
    with pytest.raises(ValueError, match="branching"):
        EpisodeOptions(paradigm="tree", branching=0)
    with pytest.raises(ValueError, match="max_model_calls"):
        EpisodeOptions(paradigm="tree", max_model_calls=0)
    with pytest.raises(ValueError, match="tie_margin"):
        EpisodeOptions(paradigm="tree", tie_margin=-0.1)


class _Episode:
    def __init__(self, margin: float) -> None:
        self.opts = EpisodeOptions(paradigm="tree", tie_margin=margin)


def _pick(margin: float, *nodes: tuple[float, int] | tuple[float, int, str]) -> int:
    """The id of the node the search expands next among ``(reward, count[, action])`` nodes,
    ids 1.."""
    frontier = [
        SearchNode(
            node=i,
            parent=0,
            depth=1,
            action=n[2] if len(n) > 2 else "click('1')",
            reward=n[0],
            count=n[1],
            status="frontier",
            event="scored",
        )
        for i, n in enumerate(nodes, 1)
    ]
    return TreeSearch(_Episode(margin))._pick(frontier).node  # type: ignore[arg-type]


def test_values_within_the_margin_are_a_tie_broken_breadth_first() -> None:
    # a plateau: node 3's lead is noise under the margin, so the first scored goes first
    assert _pick(0.02, (0.25, 1), (0.24, 1), (0.26, 1)) == 1
    assert _pick(0.0, (0.25, 1), (0.24, 1), (0.26, 1)) == 3  # no margin: the highest
    # within the margin, proposed more often wins; beyond it, the value does
    assert _pick(0.02, (0.50, 1), (0.49, 2)) == 2
    assert _pick(0.02, (0.50, 1), (0.45, 2)) == 1


def test_the_answer_goes_first_among_equals_and_never_past_a_better_node() -> None:
    place, answer = "click('24')", "send_msg_to_user('Order VW-1001 is placed.')"
    # the task is done: the answer ties an older "place the order" left on another branch
    assert _pick(0.02, (1.0, 2, place), (0.99, 1, answer)) == 2
    assert _pick(0.02, (0.99, 2, place), (1.0, 1, answer), (1.0, 1, "scroll(0, 400)")) == 2
    # an answer valued below the best (a premature one) waits
    assert _pick(0.02, (0.90, 1, place), (0.75, 2, answer)) == 1
    # giving up is not the answer; an unparseable action is not either
    assert _pick(0.02, (1.0, 1, place), (1.0, 1, "report_infeasible('no')")) == 1
    assert _pick(0.02, (1.0, 1, place), (1.0, 1, "send_msg_to_user(")) == 1
