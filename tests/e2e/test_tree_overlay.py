"""The overlay names the branch a tree search tries (extension/src/session-views.ts, the
ws-tree line), from the daemon's fan-out of ``tree.node``: a tree-search episode on the trap
shop through a real daemon (scripted judge: about the plumbing, not judgements;
tests/fixtures/tree_episode.py), a Chromium tab with the built extension attached to its
session through the page hook, held in the middle of the first backtrack's replay."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from webshepherd.daemon.demo.browser_page import hook
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.text_env import TextEnvironment
from webshepherd.protocol.client import AsyncClient

from tests.e2e.browser import Browser, require_browser
from tests.e2e.conftest import wait_connected
from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.poll import until
from tests.fixtures.scripted_judge import scripted_daemon
from tests.fixtures.tree_episode import SHOP, HeldReplay, run_tree_episode, trap_judge

require_browser()
LINE = re.compile(r"^tree: node (\d+) ← (\d+), depth (\d+), (\w[\w ]*)$")


async def test_the_overlay_names_the_branch_being_tried(browser: Browser, tmp_path: Path) -> None:
    with ShopServer(variant=SHOP) as shop:
        async with (
            scripted_daemon(tmp_path, trap_judge(shop)) as server,
            AsyncClient(server.url, TEST_TOKEN) as client,
        ):
            await browser.configure(server.url, TEST_TOKEN)
            await wait_connected(browser)
            # held before the first replayed action, and again before the tried action
            env = HeldReplay(TextEnvironment(shop.url, on_reset=lambda: shop.use(SHOP)), (1, 3))
            episode = asyncio.create_task(run_tree_episode(client, env))
            await until(lambda: env.reached == 1, 30, "the first backtrack")
            [summary] = await client.sessions()
            page = await browser.ctx.new_page()
            await page.goto(shop.url, wait_until="load")
            key = await client.hook_key(session_id=summary.session_id)
            attached = await hook(page, "attach", session_id=summary.session_id, key=key)
            assert attached["type"] == "attached", attached
            line = page.get_by_test_id("ws-tree")
            env.release()
            await until(lambda: env.reached == 2, 30, "the replay's end")

            async def replaying() -> bool:
                return await line.count() == 1 and "replaying" in await line.inner_text()

            await until(replaying, 15, "the replaying line", interval=0.1)
            held = await line.inner_text()
            env.release()
            result = await episode

            async def finished() -> bool:
                return (await line.inner_text()).endswith("finished")

            await until(finished, 15, "the finished line", interval=0.1)
            last = await line.inner_text()
    tree = result.tree
    assert tree is not None and result.outcome == "success"
    m = LINE.match(held)
    assert m is not None, held
    node, parent, depth = (int(g) for g in m.groups()[:3])
    tried = tree.node(node)
    assert (tried.parent, tried.depth) == (parent, depth) and tree.node(parent).replays >= 1
    assert tried.id in tree.path  # the branch tried after the trap is the one that ordered
    assert last == "tree: node 0, depth 0, finished"
