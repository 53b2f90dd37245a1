"""The search tree in the TUI (tui/widgets/search_tree.py), live from a real daemon: a
tree-search episode on the trap shop (scripted judge: about the plumbing, not judgements,
tests/fixtures/tree_episode.py) shows its nodes indented by parent while it runs, the node
being tried and the frontier marked, mid-replay; and every node with the path at the end."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.widgets import Static
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.text_env import TextEnvironment
from webshepherd.protocol.client import AsyncClient
from webshepherd.tui.app import WebShepherdApp
from webshepherd.tui.widgets.session_detail import SessionDetail

from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.scripted_judge import NO_GUARDS, scripted_daemon
from tests.fixtures.tree_episode import SHOP, HeldReplay, run_tree_episode, trap_judge
from tests.tui.helpers import FixedProbe, wait_until


def shown(app: WebShepherdApp) -> str:
    tree = app.screen.query_one(SessionDetail).query_one("#tree", Static)
    return str(tree.content) if tree.display else ""


async def test_the_tree_shows_live_mid_replay_and_whole_at_the_end(tmp_path: Path) -> None:
    with ShopServer(variant=SHOP) as shop:
        async with scripted_daemon(tmp_path, trap_judge(shop), guards=NO_GUARDS) as server:
            app = WebShepherdApp(
                server.url, TEST_TOKEN, probe=FixedProbe(), refresh_s=0.1, backoff_max_s=0.5
            )
            async with app.run_test(size=(140, 50)) as pilot:
                await wait_until(pilot, lambda: app.link.catch_ups >= 1, what="connected")
                env = HeldReplay(TextEnvironment(shop.url, on_reset=lambda: shop.use(SHOP)))
                async with AsyncClient(server.url, TEST_TOKEN) as client:
                    episode = asyncio.create_task(run_tree_episode(client, env))
                    await wait_until(pilot, lambda: env.reached == 1, what="the first backtrack")
                    await wait_until(pilot, lambda: "replaying" in shown(app), what="replay")
                    live = shown(app).splitlines()
                    trying = next(iter(app.state.sessions.values())).tree_trying
                    env.release()
                    result = await episode
                    path = len(result.tree.path) if result.tree else 0
                    await wait_until(  # the search's last updates mark the path, one by one
                        pilot,
                        lambda: "finished" in shown(app) and shown(app).count("★ path") == path,
                        what="the end, the whole path marked",
                    )
                    final = shown(app).splitlines()
    tree = result.tree
    assert tree is not None and result.outcome == "success"
    # mid-replay: the node being tried is marked ▶ under its parent, the frontier ○
    assert trying is not None and trying != 0
    node = tree.node(trying)
    head = f"node {trying} ← {node.parent}, depth {node.depth}, replaying"
    assert head in live[0], live[0]
    tried = next(line for line in live if f"#{trying} " in line)
    assert tried.lstrip().startswith("▶") and tried.startswith("  " * node.depth + "▶")
    assert any(line.lstrip().startswith("○") for line in live[1:])
    assert "replayed ×1" in "\n".join(live)
    # at the end: every node on its own line, indented by depth, the path starred
    assert f"{len(tree.nodes)} nodes" in final[0]
    lines = {int(line.split("#")[1].split()[0]): line for line in final[1:]}
    assert sorted(lines) == [n.node for n in tree.nodes]
    for n in tree.nodes:
        assert lines[n.node].startswith("  " * n.depth) and not lines[n.node].startswith(
            "  " * n.depth + " "
        )
        if n.reward is not None:
            assert f"{n.reward:.3f}" in lines[n.node]
        assert ("★ path" in lines[n.node]) == (n.node in tree.path), lines[n.node]
    decoy = next(n for n in tree.nodes if n.url and "/product/d1" in n.url)
    assert "★" not in lines[decoy.node] and decoy.executed
