"""Every example runs as written: ``python examples/NAME.py`` against a running daemon whose
address comes from ``WEBSHEPHERD_URL``, and prints what it shows.

Set-up: the daemon's engine is the tiny real model, whose checklist generation gives a reference
checklist. These tests are about the examples' plumbing (capture, SDK, replies, printing); whether
the tiny model writes a parseable checklist of its own depends on how long it trained.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.variants import trap_variant, variant
from webshepherd.daemon.engine.engine import Engine
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.common import SessionSummary

from tests.e2e.browser import CHROMIUM, require_browser
from tests.fixtures.daemon import REFERENCE, TEST_TOKEN, engine_like

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


class WritesReference(Engine):
    """The real engine; its checklist generation gives the reference checklist (see above)."""

    def make_checklist(self, *a, **kw):
        return self.parse_reference_checklist(REFERENCE)


@pytest.fixture
def shop() -> Iterator[str]:
    with ShopServer() as server:
        yield server.url


@pytest_asyncio.fixture(loop_scope="function")
async def daemon_url(start_daemon, daemon_engine) -> str:
    engine = engine_like(WritesReference, daemon_engine)
    handle = await start_daemon(engine=engine)
    return handle.url


async def run_example(name: str, *args: str, url: str, timeout: float = 240) -> str:
    """Run ``python examples/NAME.py ARGS`` as a person would; its output (stdout + stderr)."""
    env = {
        **os.environ,
        "WEBSHEPHERD_URL": url,
        "WEBSHEPHERD_TOKEN": TEST_TOKEN,
        "PATH": f"{Path(CHROMIUM).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLES / f"{name}.py"),
        *args,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    text = out.decode("utf-8", "replace")
    assert proc.returncode == 0, f"examples/{name}.py exited {proc.returncode}:\n{text}"
    return text


async def test_quickstart_scores_a_page_loaded_with_playwright(daemon_url, shop) -> None:
    require_browser()
    out = await run_example("quickstart", shop, url=daemon_url)
    assert out.startswith("RootWebArea '")  # the page's text first
    assert re.search(r"^\t+\[\d+\] \w+ '", out, flags=re.M)  # "[bid] role 'name'" lines
    lines = out.splitlines()
    rounded = re.compile(r" reward (\d\.\d\d|none)  feedback ")  # rewards printed rounded
    assert any(line.startswith("scroll(0, 300)") and rounded.search(line) for line in lines)
    assert any(line.startswith("go_back()") and rounded.search(line) for line in lines)
    best = [line for line in lines if line.startswith("best: ")]
    assert best and best[0] in ("best: scroll(0, 300)", "best: go_back()", "best: None")


def test_the_sample_gold_and_agent_files_give_the_documented_figures(tmp_path: Path) -> None:
    from webshepherd.daemon.cli import main

    report = tmp_path / "traj.json"
    args = ["eval", "trajectories", "--gold", str(EXAMPLES / "data" / "gold.jsonl")]
    args += ["--agent", str(EXAMPLES / "data" / "agent.jsonl"), "--json", str(report)]
    args += ["--references", str(ROOT / "tests/fixtures/data/webarena/test.raw.json")]
    assert main(args) == 0
    tasks = {t["task_id"]: t for t in json.loads(report.read_text("utf-8"))["tasks"]}
    t = tasks["124"]
    assert (t["deviations"], t["recoveries"], t["recovery_rate"]) == (2, 1, 0.5)
    assert (t["step_success_rate"], t["partial_success_rate"]) == (1.0, 1.0)
    t = tasks["226"]
    assert (t["step_success_rate"], t["deviations"], t["recoveries"]) == (1 / 3, 3, 0)
    assert (t["repetitiveness_rate"], t["partial_success_rate"]) == (0.75, 0.5)


async def test_sdk_async_scores_a_hand_written_page(daemon_url) -> None:
    out = await run_example("sdk_async", url=daemon_url)
    lines = out.splitlines()
    rounded = re.compile(r"best: (\d|None) rewards: \[(\d\.\d\d|none), (\d\.\d\d|none)\]")
    assert any(rounded.fullmatch(line) for line in lines), out
    assert any(line.startswith("feedback: ") for line in lines)


@pytest_asyncio.fixture(loop_scope="function")
async def sandbox_daemon(start_daemon, daemon_engine):
    """The tiny judge as the examples' docstrings start it offline: `serve --sandbox-origin
    'http://127.0.0.1:*'` (the bundled shop's commits run, flagged)."""
    return await start_daemon(engine=daemon_engine, sandbox_origins=("http://127.0.0.1:*",))


async def ended_sessions(url: str) -> list[SessionSummary]:
    """The recording's sessions, each checked ended (``ended_at`` set)."""
    async with AsyncClient(url, TEST_TOKEN) as client:
        sessions = await client.sessions()
    assert sessions and all(s.ended_at is not None for s in sessions), sessions
    return sessions


async def test_reward_guided_orders_the_cheapest_cable_as_its_docstring_says(
    sandbox_daemon,
) -> None:
    """The tiny judge knows the shop: each step runs the best-rewarded candidate, which is the
    scripted shopper's progress, and the cheapest USB-C cable is ordered; the session ends."""
    out = await run_example("reward_guided", url=sandbox_daemon.url)
    lines = out.splitlines()
    steps = [(lines[i], lines[i + 1]) for i, line in enumerate(lines) if line.startswith("step ")]
    assert len(steps) == 8, out
    reward = re.compile(r"(\S+\(.*?\)) (\d\.\d\d|none)(?:, |$)")
    for scored, ran in steps:
        pairs = reward.findall(scored.split(": ", 1)[1])
        assert pairs, scored
        best = max(pairs, key=lambda p: -1.0 if p[1] == "none" else float(p[1]))
        assert ran == f"  ran {best[0]}", out  # the pick is the best reward
    assert steps[0][1] == "  ran fill('14', 'usb-c cable')", out
    assert steps[-1][1] == "  ran send_msg_to_user('Order VW-1001 is placed.')", out
    assert lines[-2:] == ["outcome: success", f"orders: [[{variant(0).target()['name']!r}]]"]
    (session,) = await ended_sessions(sandbox_daemon.url)
    assert session.outcome == "success"


async def test_tree_search_explores_the_trap_shop(daemon_url) -> None:
    """Plumbing: the example runs and prints the explored nodes (whether the tiny judge leads
    the search out of the trap is a judge's matter: tests/protocol/agents/test_tree.py). The
    test daemon guards, as `serve` does, and nobody is paired: the daemon refuses "Add to
    cart" (a POST form) wherever the search would run it, and the search never runs it; each
    refused node is printed with who refused it (the guard, never a person), why and the way
    out."""
    out = await run_example("tree_search", url=daemon_url, timeout=400)
    refusals = [line for line in out.splitlines() if line.startswith("webshepherd: ")]
    lines = [line for line in out.splitlines() if not line.startswith("webshepherd: ")]
    ran = re.compile(r"node \d+ <- \d+: .+ reward (\d\.\d\d|none) \((path|left)")
    assert ran.match(lines[0]) and lines[0].split(":")[0].endswith("<- 0"), out
    assert any(line.startswith("stop: ") for line in lines)
    assert lines[-1].startswith("ordered the cheapest cable: ")
    assert refusals and all("refused" in r and "form_submit" in r for r in refusals), out
    refused = [line for line in lines if line.startswith("node ") and not ran.match(line)]
    assert refused, out
    for line in refused:
        assert re.match(r"node \d+ <- \d+: not run: refused by guard \(guard form_submit\): ", line)
        assert "no person is connected" in line and "— way out: `serve --no-guard" in line, line
    assert lines[-1].endswith("orders: []"), out  # nothing guarded ran


async def test_tree_search_with_the_tiny_judge_orders_the_right_cable_as_docs_agents_says(
    sandbox_daemon,
) -> None:
    """docs/agents.md: served as it says (the loopback shop a sandbox origin, so ordering
    runs), the shipped tiny judge's search opens the decoy, backs out of it (a branch left)
    and orders the right cable."""
    out = await run_example("tree_search", url=sandbox_daemon.url, timeout=400)
    lines = out.splitlines()
    wanted = trap_variant().target()["name"]
    assert lines[-1] == f"ordered the cheapest cable: True orders: [[{wanted!r}]]", out
    assert any(line.startswith("node ") and line.endswith("(left)") for line in lines), out
    page = " ".join((ROOT / "docs" / "agents.md").read_text("utf-8").split())
    assert "**The shipped tiny judge gets there**" in page
