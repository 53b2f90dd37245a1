"""``blame`` on real MiniWoB++ runs of a scripted agent with one injected wrong action (a real
daemon with the tiny judge records them): the command and the SDK function find the faulty
step, proven, within the replay budget, with the judge's guess beside it; ``webshepherd blame``
records the proven step through the daemon (labels with source ``replay``): the preference
exports pair it and the report shows it proven."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from webshepherd.integrations.blame import KEYS, blame

from tests.fixtures import miniwob_agent
from tests.fixtures.miniwob_agent import pages_url, record_faulted
from tests.fixtures.venvs import daemon_python
from tests.integrations.conftest import ROOT, Daemon, daemon_process
from tests.integrations.test_miniwob import export


def report(data_dir: Path, sid: str, out: Path) -> str:
    """``webshepherd report`` of one session (the main venv's CLI), as HTML text."""
    cli = Path(daemon_python()).parent / "webshepherd"
    argv = [str(cli), "report", sid, "--data-dir", str(data_dir), "--out", str(out)]
    subprocess.run(argv, check=True, timeout=300, capture_output=True)
    return out.read_text()


pytest.importorskip("browsergym.miniwob")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    os.environ["MINIWOB_URL"] = pages_url()
    with daemon_process(tmp_path_factory.mktemp("blame")) as d:
        yield d


@pytest.mark.timeout(900)
def test_the_command_proves_the_injected_step_of_a_faulted_run(
    daemon: Daemon, tmp_path: Path
) -> None:
    # enter-text: fill, then a wrong fill over it (step 2), then Submit
    sid, won, _ = record_faulted(daemon.url, daemon.token, daemon.data_dir, "enter-text", 1, 1)
    assert won is False
    out = tmp_path / "blame.json"
    env = dict(os.environ, WEBSHEPHERD_URL=daemon.url, WEBSHEPHERD_TOKEN=daemon.token)
    done = subprocess.run(
        [sys.executable, "-m", "webshepherd.daemon.cli", "blame", sid,
         "--agent", "tests.fixtures.miniwob_agent:make", "--json", str(out),
         "--data-dir", str(daemon.data_dir)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=800,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = json.loads(out.read_text())
    assert list(got)[: len(KEYS)] == list(KEYS)
    assert (got["first_bad_step"], got["steps_counted_from"], got["proven"]) == (2, 1, True)
    assert done.stdout.startswith("first bad step: step 2 (proven): from step 2, ")
    won_runs = [e for e in got["evidence"] if e["won"]]
    assert any(e["from_step"] == 2 and e["tried"] == "click('15')" for e in won_runs)
    assert all(not e["won"] for e in got["evidence"] if e["from_step"] == 3)
    assert got["reproduced"] is True and got["refused_writes"] == 0
    assert got["replays"] == len(got["evidence"])
    assert got["budget_per_candidate"] == math.ceil(math.log2(3)) + 2
    # recorded as truth from a replay: the pair the exports make, the step the report proves
    assert done.stdout.endswith(
        "recorded: step 2's action \"fill('14', 'wrong')\" lost (replay)\n"
        "recorded: step 2's candidate \"click('15')\" won (replay)\n"
    )
    (pair,) = export(daemon.data_dir, "trl-preference", tmp_path / "exports")
    assert (pair["chosen_source"], pair["rejected_source"]) == ("replay", "replay")
    (row,) = export(daemon.data_dir, "webprm", tmp_path / "exports")
    assert (row["chosen"]["action"], row["chosen_source"]) == ("click('15')", "replay")
    assert [r["action"] for r in row["rejected"]] == ["fill('14', 'wrong')"]
    assert row["rejected_source"] == ["replay"]
    html = report(daemon.data_dir, sid, tmp_path / "report.html").replace("&#x27;", "'")
    assert "step 2</a> (proven by replays): fill('14', 'wrong') lost" in html


@pytest.mark.timeout(900)
def test_the_sdk_function_proves_a_fault_at_the_first_step(daemon: Daemon) -> None:
    # login-user: a wrong username first; the agent then fills the password and logs in
    sid, won, _ = record_faulted(daemon.url, daemon.token, daemon.data_dir, "login-user", 1, 0)
    assert won is False
    found = blame(sid, miniwob_agent.make, data_dir=daemon.data_dir)
    assert (found.first_bad_step, found.proven) == (0, True), found.lines()
    assert found.as_dict()["first_bad_step"] == 1
    assert found.replays <= found.budget * 3  # its alternative, the agent's own choice
    assert found.judge_guess != 0  # the judge's rule never names the first step
