"""``webshepherd label rollouts`` on a real MiniWoB++ run of the scripted agent with one
injected wrong action (a real daemon with the tiny judge records it): each recorded
candidate's share of N = 4 rollouts that won agrees with the scripted truth, the values are
recorded as labels with source ``rollout``, and the preference exports pair them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.recorder.history import History
from webshepherd.integrations.replay import load

from tests.fixtures.miniwob_agent import pages_url, record_faulted
from tests.integrations.conftest import ROOT, Daemon, daemon_process
from tests.integrations.test_miniwob import export

pytest.importorskip("browsergym.miniwob")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    os.environ["MINIWOB_URL"] = pages_url()
    with daemon_process(tmp_path_factory.mktemp("rollouts")) as d:
        yield d


def scripted_truth(actions: list[str], candidates: list[list[str]], fault_at: int) -> list[bool]:
    """Whether each candidate, step by step, can still win with the scripted agent: the right
    action of a step before the fault (the executed one) or at it (the one the fault
    replaced); nothing after it (the agent repairs nothing)."""
    out = []
    for k, (executed, cands) in enumerate(zip(actions, candidates, strict=True)):
        for action in cands:
            right = action == executed if k < fault_at else action != executed
            out.append(k <= fault_at and right)
    return out


@pytest.mark.timeout(900)
def test_rollout_labels_agree_with_the_scripted_truth_and_the_exports_pair_them(
    daemon: Daemon, tmp_path: Path
) -> None:
    # enter-text: a wrong fill (step 1), then Submit
    sid, won, _ = record_faulted(daemon.url, daemon.token, daemon.data_dir, "enter-text", 1, 0)
    assert won is False
    rec = load(sid, daemon.data_dir)
    cands = [[a for a, _ in s.candidates] for s in rec.steps]
    assert all(len(c) == 2 for c in cands), cands  # what ran and what was weighed
    # the injected fill (a busy CPU may have repeated an action BrowserGym timed out)
    at = next(k for k, a in enumerate(rec.actions) if a.endswith(", 'wrong')"))
    out = tmp_path / "rollouts.json"
    env = dict(os.environ, WEBSHEPHERD_URL=daemon.url, WEBSHEPHERD_TOKEN=daemon.token)
    done = subprocess.run(
        [sys.executable, "-m", "webshepherd.daemon.cli", "label", "rollouts", sid,
         "--agent", "tests.fixtures.miniwob_agent:make", "--rollouts", "4",
         "--json", str(out), "--data-dir", str(daemon.data_dir)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=800,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = json.loads(out.read_text())
    values = got["values"]
    assert [(v["step"] - 1, v["action"]) for v in values] == [
        (s.step, a) for s, c in zip(rec.steps, cands, strict=True) for a in c
    ]
    assert all(v["rollouts"] == 4 and v["drifted"] == 0 for v in values)
    assert got["replays"] == 4 * len(values) and got["refused_writes"] == 0
    truth = scripted_truth(rec.actions, cands, at)
    agree = sum((v["value"] > 0) == t for v, t in zip(values, truth, strict=True))
    assert agree / len(values) >= 0.95, (agree, values, truth)
    assert done.stdout.endswith(f"recorded: {len(values)} labels (source rollout)\n")

    history = History.open(daemon.data_dir / DB_NAME)
    try:
        tl = history.timeline(sid)
    finally:
        history.close()
    assert tl is not None
    labels = {(st.step, x.action): x for st in tl.steps for x in st.labels}
    assert len(labels) == len(values)
    for v in values:
        lab = labels[(v["step"] - 1, v["action"])]
        assert (lab.source, lab.items, lab.note) == (
            "rollout",
            [v["level"]],
            f"rollouts: {v['won']}/4 won",
        )

    # the right candidate against the wrong one at each step that could still be won
    flat = [a for c in cands for a in c]
    right = {a for a, t in zip(flat, truth, strict=True) if t}
    preference = export(daemon.data_dir, "trl-preference", tmp_path / "exports")
    assert len(preference) == at + 1
    assert {(r["chosen_source"], r["rejected_source"]) for r in preference} == {
        ("rollout", "rollout")
    }
    webprm = export(daemon.data_dir, "webprm", tmp_path / "exports")
    assert {(r["chosen"]["action"], r["chosen_source"]) for r in webprm} == {
        (a, "rollout") for a in right
    }
    assert all(r["rejected_source"] == ["rollout"] for r in webprm)
