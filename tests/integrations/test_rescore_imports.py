"""``webshepherd rescore`` on runs the real frameworks made without webshepherd: browser-use's
Agent (scripted chat model) saves its ``AgentHistoryList``, AgentLab's loop (a scripted
agent) writes its experiment folder, both over the bundled shop; each is re-scored with one
command, by the main venv's Python (no browser-use, AgentLab or BrowserGym installed there),
against a real daemon (tiny model).

Setup: the frameworks run inside the tests (a few seconds each), so the files are what the
installed versions write today, not committed copies that could go stale. The tiny model's
judgements are noise: these tests check the plumbing (the import, one scored step per
executed action, the session's source, the summary, the report), not which step is named;
the naming is tested on a JSONL run with a scripted judge (tests/daemon/offline/
test_rescore.py) and on given judgements (tests/protocol/test_progress.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import agentlab.experiments.loop as agentlab_loop
import pytest
from agentlab.experiments.loop import EnvArgs, ExpArgs
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.client.sync import Client
from webshepherd.protocol.steps import step_label

from tests.fixtures.venvs import daemon_python
from tests.integrations.conftest import CHECKLIST, ROOT, Daemon
from tests.integrations.test_agentlab import GOAL, ScriptedArgs
from tests.integrations.test_browser_use import TASK, ScriptedChat, make_agent

PYTHON = daemon_python()


def rescore(daemon: Daemon, path: Path, out: Path, *extra: str) -> tuple[str, dict[str, Any]]:
    """``webshepherd rescore PATH`` in the main venv; returns what it printed and its JSON."""
    done = subprocess.run(
        [
            *(PYTHON, "-m", "webshepherd.daemon.cli", "rescore", str(path)),
            *("--url", daemon.url, "--checklist", CHECKLIST),
            *("--data-dir", str(daemon.data_dir), "--json", str(out / "summary.json")),
            *("--out", str(out / "report.html"), "--samples", "1", *extra),
        ],
        cwd=ROOT,
        env={**os.environ, "WEBSHEPHERD_TOKEN": daemon.token},  # never a secret in argv
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads((out / "summary.json").read_text())


async def source_of(daemon: Daemon, session_id: str) -> str:
    async with AsyncClient(daemon.url, daemon.token) as client:
        sessions = await client.sessions()
    return next(s.source for s in sessions if s.session_id == session_id)


def check_summary(printed: str, summary: dict[str, Any], out: Path) -> None:
    assert set(summary["first_bad_steps"]) == {"progress", "reward"}
    for label, bad in summary["first_bad_steps"].items():
        if bad is not None:  # named, with the judge's feedback at that step
            assert f"first bad step ({label}): {step_label(bad['step'])}: " in printed
            assert bad["step"] in range(summary["steps"]) and isinstance(bad["feedback"], str)
    assert "first bad step (progress):" in printed and "first bad step (reward):" in printed
    assert summary["report"] == str(out / "report.html")
    assert "First bad step" in (out / "report.html").read_text()


async def test_a_browser_use_history_is_rescored(
    shop: ShopServer, daemon: Daemon, tmp_path: Path
) -> None:
    llm = ScriptedChat()
    agent = make_agent(shop, llm)  # no webshepherd attached: a plain browser-use run
    try:
        history = await agent.run(max_steps=4)
    finally:
        await agent.browser_session.kill()
    saved = tmp_path / "history.json"
    history.save_to_file(saved)
    printed, summary = rescore(daemon, saved, tmp_path)
    assert summary["format"] == "browser-use" and summary["intent"] == TASK
    # the initial navigation and the agent's three steps; the navigation saw no page
    assert summary["steps"] == 4 and summary["steps_scored"] == 3
    [skipped] = summary["skipped"]
    assert skipped["step"] == 0 and "no AX tree or screenshot" in skipped["why"]
    assert "browser-use's page text" in printed
    assert re.search(r"fill\('\d+', 'usb-c'\)", printed)
    assert await source_of(daemon, summary["session_id"]) == "import"
    check_summary(printed, summary, tmp_path)


def test_an_agentlab_folder_is_rescored(
    shop: ShopServer, daemon: Daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sync: AgentLab's loop drives BrowserGym's sync playwright (no event loop may run)."""
    # AgentLab counts tokens with tiktoken, which downloads its encoding: words instead
    monkeypatch.setattr(agentlab_loop, "count_tokens", lambda text: len(text.split()))
    exp = ExpArgs(
        agent_args=ScriptedArgs(multi_candidate=False),  # no webshepherd in the loop
        env_args=EnvArgs(
            "openended",
            task_seed=0,
            max_steps=3,
            task_kwargs={"start_url": shop.url, "goal": GOAL},
        ),
        save_screenshot=True,
    )
    exp.prepare(tmp_path / "runs")
    exp.run()
    assert exp.err_msg is None, exp.stack_trace
    folder = Path(exp.exp_dir)
    actions = len(list(folder.glob("step_*.pkl.gz"))) - 1  # the last holds the final page
    printed, summary = rescore(daemon, folder, tmp_path)
    assert summary["format"] == "agentlab" and summary["intent"] == GOAL
    assert summary["steps"] == summary["steps_scored"] == actions == 3
    assert len(summary["rewards"]) == 3
    with Client(daemon.url, daemon.token) as client:
        sessions = client.sessions()
    assert next(s.source for s in sessions if s.session_id == summary["session_id"]) == "import"
    check_summary(printed, summary, tmp_path)
