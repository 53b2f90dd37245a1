"""Agent trajectories read from the recording (trajectories.read_sessions): for a tree search,
the planning metrics read the path it returned, not the abandoned branches it also executed.
A tree-search episode on the trap shop through a real daemon; the judge is scripted (about
the plumbing, not judgements; tests/fixtures/tree_episode.py)."""

from __future__ import annotations

from pathlib import Path

from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.text_env import TextEnvironment
from webshepherd.daemon.offline.evaluation.trajectories import read_sessions
from webshepherd.daemon.recorder import History
from webshepherd.protocol.client import AsyncClient

from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.scripted_judge import NO_GUARDS, scripted_daemon
from tests.fixtures.tree_episode import SHOP, run_tree_episode, trap_judge


async def test_a_tree_search_is_read_as_the_path_it_returned(tmp_path: Path) -> None:
    with ShopServer(variant=SHOP) as shop:
        async with (
            scripted_daemon(tmp_path, trap_judge(shop), guards=NO_GUARDS) as server,
            AsyncClient(server.url, TEST_TOKEN) as client,
        ):
            env = TextEnvironment(shop.url, on_reset=lambda: shop.use(SHOP))
            result = await run_tree_episode(client, env)
    tree = result.tree
    assert tree is not None and result.outcome == "success"
    path = [tree.node(i).action for i in tree.path[1:]]
    db = tmp_path / "data" / DB_NAME
    traj = read_sessions(db, [result.session_id])[result.session_id]
    assert [s.executed for s in traj.steps] == path and traj.success is True
    history = History.open(db)
    tl = history.timeline(result.session_id)
    history.close()
    assert tl is not None and tl.tree is not None and tl.tree.path == tree.path
    # the session also holds the actions of the branch it left (the decoy's): not read
    executed = [a.action for a in tl.actions]
    assert len(executed) > len(path) and executed != path
