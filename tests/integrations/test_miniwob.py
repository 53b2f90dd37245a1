"""A real benchmark (issue 44.7): MiniWoB++ through ``browsergym-miniwob``, a scripted agent
over 10 task types, plain and through ProcessRewardWrapper with the daemon's defaults (the
tiny judge, mode ask, nobody paired, no reference checklist), one env reused across seeds and
a fresh env per seed. The wrapped agent solves every episode the plain one solves; every
episode is recorded with the env's outcome; each export yields the rows
docs/export-formats.md says for a wrapper run with candidates and no labels: none from the
judge unless asked (``--include-judged``, marked ``judge``), and the judge's own checklist in
no row. tests/integrations/test_miniwob_labels.py labels such a run."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from webshepherd.integrations.browsergym import ProcessRewardWrapper, observation_text
from webshepherd.protocol.client.sync import Client

from tests.fixtures.venvs import daemon_python
from tests.integrations.conftest import CHROMIUM, Daemon, daemon_process

miniwob = pytest.importorskip("miniwob")
pytest.importorskip("browsergym.miniwob")

TASKS = (
    "click-button", "click-link", "enter-text", "click-checkboxes", "login-user",
    "choose-list", "click-dialog", "click-option", "enter-password", "click-tab",
)  # fmt: skip
SEEDS = (1, 2)
#: The tasks also run with a fresh env per seed (a browser each: kept few for CI's 2 cores)
FRESH = ("click-button", "enter-text", "login-user")
#: The task pages the ``miniwob`` package ships (what browsergym-miniwob's MINIWOB_URL names).
PAGES = Path(miniwob.__file__).parent / "html" / "miniwob"


@pytest.fixture(autouse=True)
def miniwob_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIWOB_URL", PAGES.as_uri() + "/")


def make_env(task: str) -> Any:
    import browsergym.miniwob  # noqa: F401  (registers the browsergym/miniwob.* ids)

    return gym.make(
        f"browsergym/miniwob.{task}",
        headless=True,
        pw_chromium_kwargs={"executable_path": CHROMIUM},
    )


def bid(obs: dict[str, Any], role: str, name: str | None = None) -> str:
    """The bid of the first ``role`` element (named ``name``) in the observation's text."""
    label = re.escape(name) if name is not None else "[^']*"
    found = re.search(rf"\[(\w+)\] {role} '{label}'", observation_text(obs))
    assert found, f"no {role} {name!r} in the page"
    return found.group(1)


def bids(obs: dict[str, Any], role: str) -> list[str]:
    return re.findall(rf"\[(\w+)\] {role} ", observation_text(obs))


def quoted(goal: str) -> list[str]:
    return re.findall(r'"([^"]*)"', goal)


def plan(task: str, goal: str, obs: dict[str, Any], page: Any) -> list[str]:
    """The scripted agent: the BrowserGym actions that solve ``task``, read from its goal."""
    if task == "click-button":
        return [f"click('{bid(obs, 'button', quoted(goal)[0])}')"]
    if task == "click-link":  # the links are spans (no role): their bids are in the DOM
        (text,) = quoted(goal)
        links = page.eval_on_selector_all(
            "span.alink", "els => els.map(e => [e.textContent, e.getAttribute('bid')])"
        )
        return [f"click('{next(b for t, b in links if t == text)}')"]
    if task == "enter-text":
        return [f"fill('{bid(obs, 'textbox')}', {quoted(goal)[0]!r})", submit(obs)]
    if task in ("click-checkboxes", "click-option"):
        names = re.match(r"Select (.*) and click Submit\.", goal)
        assert names, goal
        role = "checkbox" if task == "click-checkboxes" else "radio"
        picks = [n.strip() for n in names.group(1).split(",") if n.strip()]
        return [*(f"click('{bid(obs, role, n)}')" for n in picks), submit(obs)]
    if task in ("login-user", "enter-password"):
        boxes = bids(obs, "textbox")
        values = quoted(goal) if task == "login-user" else quoted(goal) * 2
        fills = [f"fill('{b}', {v!r})" for b, v in zip(boxes, values, strict=True)]
        return [*fills, f"click('{bids(obs, 'button')[0]}')"]
    if task == "choose-list":
        option = re.match(r"Select (.*) from the list", goal)
        assert option, goal
        return [f"select_option('{bid(obs, 'combobox')}', {option.group(1)!r})", submit(obs)]
    if task == "focus-text":
        return [f"click('{bid(obs, 'textbox')}')"]
    if task == "click-dialog":
        return [f"click('{bid(obs, 'button', 'Close')}')"]
    if task == "click-tab":
        tab = re.match(r"Click on (.*)\.", goal)
        assert tab, goal
        return [f"click('{bid(obs, 'link', tab.group(1))}')"]
    if task == "click-test":
        return [f"click('{bid(obs, 'button')}')"]
    raise AssertionError(f"no plan for {task}")


def submit(obs: dict[str, Any]) -> str:
    return f"click('{bid(obs, 'button', 'Submit')}')"


def other(obs: dict[str, Any], action: str) -> str:
    """The candidate the agent weighed and did not run: a click on another element (a clear
    negative of the executed action, docs/export-formats.md), else a scroll."""
    used = set(re.findall(r"'(\w+)'", action))
    rest = [b for b in re.findall(r"\[(\w+)\]", observation_text(obs)) if b not in used]
    return f"click('{rest[-1]}')" if rest else "scroll(0, 200)"


@dataclass
class Episode:
    task: str
    seed: int
    solved: bool
    session_id: str | None = None
    # each step: the executed action's reward and the other candidate's
    rewards: list[tuple[float | None, float | None]] = field(default_factory=list)


def run(env: Any, task: str, seed: int, wrapped: bool) -> Episode:
    """One episode of the scripted agent (the wrapped env: each step with one other
    candidate); solved when the env terminates with a reward > 0."""
    obs, info = env.reset(seed=seed)
    sid = info["webshepherd"]["session_id"] if wrapped else None
    ep = Episode(task, seed, solved=False, session_id=sid)
    for action in plan(task, obs["goal"], obs, env.unwrapped.page):
        for _ in range(2):  # once more after BrowserGym's 500 ms action timeout (a busy CPU)
            if wrapped:
                obs, reward, terminated, _, info = env.step(action, candidates=[other(obs, action)])
                ws = info["webshepherd"]
                assert "refused" not in ws, ws  # MiniWoB sends nothing that commits
                assert ws["action"] == action
                assert [c["action"] for c in ws["candidates"]][1] == action
                assert ws["reward"] is not None or ws["reason"].startswith("the judge")  # why
                ep.rewards.append((ws["candidates"][1]["reward"], ws["candidates"][0]["reward"]))
            else:
                obs, reward, terminated, _, info = env.step(action)
            if terminated or not obs["last_action_error"].startswith("TimeoutError: "):
                break
        assert not obs["last_action_error"], (task, action, obs["last_action_error"])
        if terminated:
            ep.solved = reward > 0
            break
    return ep


def reused(task: str, wrapped: bool, daemon: Daemon | None) -> Iterator[Episode]:
    """Every seed on one env (as benchmark loops do); the wrapper records at reset/close."""
    env = make_env(task)
    if wrapped:
        assert daemon is not None
        env = ProcessRewardWrapper(env, url=daemon.url, token=daemon.token)
    try:
        for seed in SEEDS:
            yield run(env, task, seed, wrapped)
    finally:
        env.close()


def fresh(task: str, daemon: Daemon) -> Iterator[Episode]:
    """A new wrapped env for each seed."""
    for seed in SEEDS:
        env = ProcessRewardWrapper(make_env(task), url=daemon.url, token=daemon.token)
        try:
            yield run(env, task, seed, wrapped=True)
        finally:
            env.close()


def export(data_dir: Path, fmt: str, out: Path, *flags: str) -> list[dict[str, Any]]:
    """``webshepherd export --format fmt [flags]`` of the recording (the main venv's CLI)."""
    python = daemon_python()
    cli = Path(python).parent / "webshepherd"
    name = "-".join([fmt, *(f.strip("-") for f in flags)])
    target = out / name if fmt == "mind2web" else out / f"{name}.jsonl"
    subprocess.run(
        [str(cli), "export", "--format", fmt, "--data-dir", str(data_dir), "--out", str(target),
         "--quiet", *flags],
        check=True,
        timeout=300,
    )  # fmt: skip
    if fmt == "mind2web":
        return [json.loads(p.read_text()) for p in sorted(target.glob("*/result.json"))]
    return [json.loads(line) for line in target.read_text().splitlines() if line.strip()]


def below(executed: float | None, other: float | None) -> bool:
    """Whether ``--include-judged`` rejects the other candidate (a clear negative of the
    executed action): the judge scored both, the other one lower."""
    return executed is not None and other is not None and other < executed


@pytest.mark.timeout(900)
def test_a_wrapped_scripted_agent_solves_what_the_plain_env_solves_and_is_recorded(
    tmp_path: Path,
) -> None:
    with daemon_process(tmp_path / "daemon") as daemon:
        plain = {(e.task, e.seed): e for t in TASKS for e in reused(t, False, None)}
        wrapped = [e for t in TASKS for e in reused(t, True, daemon)]
        wrapped += [e for t in FRESH for e in fresh(t, daemon)]
        with Client(daemon.url, daemon.token) as client:
            events = {e.session_id: client.session(e.session_id).events for e in wrapped}
    assert all(e.solved for e in plain.values()), [k for k, e in plain.items() if not e.solved]
    assert len(wrapped) == len(plain) + len(FRESH) * len(SEEDS)
    for e in wrapped:  # the wrapped agent solves each episode the plain one solves
        assert e.solved or not plain[(e.task, e.seed)].solved, (e.task, e.seed)
    for e in wrapped:  # recorded with the env's own outcome; a judge's checklist: generated
        evs = events[e.session_id]
        (end,) = [x for x in evs if x.get("type") == "session.ended"]
        assert end["outcome"] == ("success" if e.solved else "failure"), (e.task, end)
        assert end["answer"].startswith("the env terminated with reward ")
        assert {x["source"] for x in evs if x.get("type") == "checklist"} <= {"generated"}

    data, out, judged = tmp_path / "daemon" / "data", tmp_path / "exports", "--include-judged"
    won = [e for e in wrapped if e.solved]
    steps = [below(ex, ot) for e in won for ex, ot in e.rewards]
    # no labels, nobody paired: the outcome says the executed actions were right and nothing
    # of the candidates not run, so nothing pairs; the judge's rows only when asked, marked
    assert export(data, "webprm", out) == [] and export(data, "trl-preference", out) == []
    webprm = export(data, "webprm", out, judged)
    assert len(webprm) == sum(steps)  # a step with its other candidate judged below
    for row in webprm:
        assert len(row["rejected"]) == 1 and row["chosen"]["action"] != row["rejected"][0]["action"]
        assert (row["chosen_source"], row["rejected_source"]) == ("outcome", ["judge"])
        # the judge's own checklist is not the task's: in no row
        assert (row["checklist"], row["checklist_target_list"]) == ("", "[]")
        assert row["checklist_source"] is None
    preference = export(data, "trl-preference", out, judged)
    assert len(preference) == sum(steps)  # one pair per rejected candidate
    assert {r["rejected_source"] for r in preference} == {"judge"}
    prm = export(data, "trl-prm", out)
    assert len(prm) == len(won) and all(all(r["labels"]) for r in prm)  # outcome: all True
    assert {s for r in prm for s in r["sources"]} == {"outcome"}
    assert {r["checklist_source"] for r in prm} == {None}
    prm = export(data, "trl-prm", out, judged)
    assert len(prm) == len(won) + sum(steps)  # a session's all-True run + one per rejected
    assert sum(all(r["labels"]) for r in prm) == len(won)
    assert export(data, "sft", out) == []  # no reference, no labels
    results = export(data, "mind2web", out)
    assert len(results) == len(wrapped)
