"""The search tree in ``webshepherd report`` (daemon/offline/report/tree.py): a tree-search
episode on the trap shop recorded through a real daemon (scripted judge: about the plumbing,
not judgements; tests/fixtures/tree_episode.py) is drawn as a nested list in real Chromium,
each node under its parent, the path marked; node texts from an agent are escaped."""

from __future__ import annotations

import asyncio
from pathlib import Path

from playwright.async_api import async_playwright
from webshepherd.daemon.cli import main
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.text_env import TextEnvironment
from webshepherd.protocol.client import AsyncClient

from tests.fixtures.daemon import TEST_TOKEN, DaemonHandle, make_config, start_session
from tests.fixtures.report_session import CHROMIUM
from tests.fixtures.scripted_judge import NO_GUARDS, ScriptedJudge, scripted_daemon
from tests.fixtures.tree_episode import SHOP, run_tree_episode, trap_judge

HOSTILE = "<img src=x onerror=\"document.title='owned'\"><script>document.title='owned'</script>"


async def _report(data_dir: Path, sid: str, out: Path) -> str:
    rc = await asyncio.to_thread(
        main, ["report", sid, "--out", str(out), "--data-dir", str(data_dir)]
    )
    assert rc == 0
    return out.read_text(encoding="utf-8")


async def test_the_report_draws_every_node_under_its_parent(tmp_path: Path) -> None:
    with ShopServer(variant=SHOP) as shop:
        async with (
            scripted_daemon(tmp_path, trap_judge(shop), guards=NO_GUARDS) as server,
            AsyncClient(server.url, TEST_TOKEN) as client,
        ):
            env = TextEnvironment(shop.url, on_reset=lambda: shop.use(SHOP))
            result = await run_tree_episode(client, env)
    tree = result.tree
    assert tree is not None and result.outcome == "success"
    out = tmp_path / "report.html"
    html = await _report(tmp_path / "data", result.session_id, out)
    assert 'id="search-tree"' in html
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = await browser.new_page()
            await page.goto(out.as_uri())
            drawn = await page.eval_on_selector_all(
                "#search-tree ul.tree li",
                """els => els.map(li => [li.id, li.parentElement.closest('li')?.id ?? null,
                    li.classList.contains('path'),
                    li.querySelector(':scope > .node code')?.innerText ?? null,
                    li.querySelector(':scope > .node .reward').innerText])""",
            )
        finally:
            await browser.close()
    assert len(drawn) == len(tree.nodes)
    for node_id, parent_id, on_path, action, reward in drawn:
        n = tree.node(int(node_id.removeprefix("node-")))
        assert parent_id == (f"node-{n.parent}" if n.parent is not None else None)
        assert on_path == (n.node in tree.path) and action == n.action
        assert reward == ("—" if n.reward is None else f"{n.reward:.3f}")
    decoy = next(n for n in tree.nodes if n.url and "/product/d1" in n.url)
    assert decoy.executed and decoy.node not in tree.path
    assert f"path: {' → '.join(f'#{i}' for i in tree.path)}" in html


async def test_node_texts_are_escaped(tmp_path: Path) -> None:
    async with scripted_daemon(tmp_path, ScriptedJudge(default=(0.5, (0, 0), "x"))) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        agent = await d.client()
        sid = await start_session(agent)
        action = f"click('{HOSTILE}')"
        candidate = {"thought": HOSTILE, "action": action}
        scored = await agent.request(
            {"type": "score", "session_id": sid, "approval": "never", "candidates": [candidate]}
        )
        nodes = [
            {"node": 0, "parent": None, "depth": 0, "status": "expanded", "event": "expanded",
             "url": "http://shop.local/" + HOSTILE},
            {"node": 1, "parent": 0, "depth": 1, "action": action, "thought": HOSTILE,
             "step": scored["step"], "status": "failed", "event": "executed", "error": HOSTILE},
        ]  # fmt: skip
        for n in nodes:
            got = await agent.request({"type": "tree.node", "session_id": sid, **n})
            assert got["type"] == "tree.node.recorded", got
        await d.close_clients()
    out = tmp_path / "report.html"
    html = await _report(tmp_path / "data", sid, out)
    section = html[html.index('id="search-tree"') :]
    assert "<img" not in section and "<script" not in section
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = await browser.new_page()
            await page.goto(out.as_uri())
            assert await page.locator("#search-tree img, #search-tree script").count() == 0
            texts = await page.locator("#node-1 .thought").all_inner_texts()
            assert texts == [HOSTILE, HOSTILE]  # the thought and the error, as written
            assert await page.locator("#node-1 code").inner_text() == action
            assert await page.title() != "owned"
        finally:
            await browser.close()
