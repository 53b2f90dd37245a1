"""Issue 48's done-when on a real benchmark: on a wrapped MiniWoB++ run with candidates and
labels, every labelled wrong candidate makes a pair, whatever the judge scored, and each row
says its truth came from the labels.

MiniWoB++ from the package index (``browsergym-miniwob``, ``miniwob``), the real daemon, the
wrapper with a checklist per episode written from the goal, ``env.session.label`` at
``info["webshepherd"]["step"]``, and ``webshepherd export``. The judge is scripted to score
every wrong candidate at least as high as the right one (a tie and a win): the rule the
exports had, a pair only where the judge agreed, would make none. Then the docs' example
(``examples/miniwob_rewards.py``) against the tiny judge: each wrong action it labels is a
pair."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from webshepherd.integrations.browsergym import ProcessRewardWrapper

from tests.integrations.conftest import CHROMIUM, ROOT, daemon_process
from tests.integrations.test_miniwob import PAGES, export, make_env, plan

TASKS = ("click-button", "enter-text", "login-user", "click-checkboxes")
SEEDS = (1, 2)
#: the wrong candidates weighed at every step: neither moves the task on
WRONG = ("scroll(0, 200)", "noop()")
#: the judge: every action 0.5, but the scroll 1.0 (the wrong ones tie with or beat the right)
JUDGE = {"default": [0.5, [1], "fine"], "actions": {"scroll(0, 200)": [1.0, [2], "good"]}}


@pytest.fixture(autouse=True)
def miniwob_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIWOB_URL", PAGES.as_uri() + "/")


def one_item(goal: str, task_info: Any) -> list[str]:
    """The episode's checklist, from its goal: the goal done."""
    return [f"Done: {goal}"]


@pytest.mark.timeout(900)
def test_every_labelled_wrong_candidate_makes_a_pair_whatever_the_judge_scored(
    tmp_path: Path,
) -> None:
    labelled: list[tuple[str, int, str]] = []  # (session, step, wrong action)
    scored: list[dict[str, float | None]] = []
    with daemon_process(tmp_path / "daemon", {"judge": JUDGE}) as daemon:
        for task in TASKS:
            env = ProcessRewardWrapper(
                make_env(task), url=daemon.url, token=daemon.token, checklist=one_item
            )
            try:
                for seed in SEEDS:
                    obs, info = env.reset(seed=seed)
                    assert info["webshepherd"]["checklist"] == [f"Done: {obs['goal']}"]
                    actions = plan(task, obs["goal"], obs, env.unwrapped.page)
                    for n, action in enumerate(actions, 1):
                        obs, reward, terminated, _, info = env.step(action, candidates=WRONG)
                        ws = info["webshepherd"]
                        scored.append({c["action"]: c["reward"] for c in ws["candidates"]})
                        assert env.session is not None
                        right = "yes" if n == len(actions) else "in_progress"
                        env.session.label(ws["step"], action, [right])
                        for wrong in WRONG:
                            env.session.label(ws["step"], wrong, ["no"])
                            labelled.append((ws["session_id"], ws["step"], wrong))
                    for _ in range(3):  # a page slow under load: its end read once more
                        if terminated:
                            break
                        obs, reward, terminated, _, info = env.step("noop()")
                    said = (task, seed, obs["last_action_error"], info.get("task_info"))
                    assert terminated and reward > 0, said  # the env's own outcome
            finally:
                env.close()
    for step in scored:  # the judge put each wrong candidate level with or above the right
        level = next(r for a, r in step.items() if a not in WRONG)
        assert level is not None and all((step[w] or 0.0) >= level for w in WRONG), step

    data, out = tmp_path / "daemon" / "data", tmp_path / "exports"
    webprm = export(data, "webprm", out)
    pairs = Counter(
        (r["task_id"], int(r["step_id"]), rejected["action"])
        for r in webprm
        for rejected in r["rejected"]
    )
    assert pairs == Counter(labelled)  # every labelled wrong candidate, and nothing else
    assert all(r["chosen_source"] == "label" for r in webprm)
    assert all(r["rejected_source"] == ["label"] * len(WRONG) for r in webprm)
    assert all(r["chosen"]["action"] not in WRONG for r in webprm)
    # the checklist given per episode is the task's own: written as such
    assert all(r["checklist_source"] == "reference" for r in webprm)
    preference = export(data, "trl-preference", out)
    assert len(preference) == len(labelled)
    assert {(r["chosen_source"], r["rejected_source"]) for r in preference} == {("label", "label")}


@pytest.mark.timeout(900)
def test_the_docs_miniwob_example_labels_pairs_the_export_keeps(tmp_path: Path) -> None:
    """``examples/miniwob_rewards.py`` (docs/frameworks.md's recipe) against the tiny judge:
    each wrong action it labels makes a pair with its right one, whatever the judge scored."""
    with daemon_process(tmp_path / "daemon") as daemon:
        env = dict(os.environ, WEBSHEPHERD_URL=daemon.url, WEBSHEPHERD_TOKEN=daemon.token)
        env |= {"CHROMIUM": CHROMIUM, "XDG_CACHE_HOME": str(tmp_path / "cache")}
        argv = [sys.executable, str(ROOT / "examples" / "miniwob_rewards.py")]
        run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    steps = re.findall(r"^  step \d+: (.+) (\S+) \(ran\), (.+) (\S+)$", run.stdout, re.M)
    assert len(steps) == 1 + 2 + 3, run.stdout  # click-button, enter-text, login-user
    assert run.stdout.count("  reward 1.0") == 3, run.stdout
    webprm = export(tmp_path / "daemon" / "data", "webprm", tmp_path / "exports")
    assert Counter((r["chosen"]["action"], r["rejected"][0]["action"]) for r in webprm) == Counter(
        (right, wrong) for right, _, wrong, _ in steps
    )
    assert {(r["chosen_source"], *r["rejected_source"]) for r in webprm} == {("label", "label")}
