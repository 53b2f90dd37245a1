"""AgentLab's own experiment loop (``ExpArgs.run``) on BrowserGym's open-ended task over the
bundled shop, with RewardGuidedAgentArgs around scripted subagents and a real daemon (tiny
model): the recording, rewards in AgentInfo, best-of-n, refine hints, a rejected action."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import agentlab.experiments.loop as agentlab_loop
import pytest
from agentlab.agents.agent_args import AgentArgs
from agentlab.experiments.loop import EnvArgs, ExpArgs, StepInfo, get_exp_result
from browsergym.experiments.agent import Agent, AgentInfo, default_obs_preprocessor
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.variants import variant
from webshepherd.integrations.agentlab import REJECTED_ACTION, RewardGuidedAgentArgs
from webshepherd.integrations.browsergym import observation_text
from webshepherd.protocol.agents.best_of_n import action_key, select
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.client.sync import Client
from webshepherd.protocol.common import SessionSummary

from tests.integrations.conftest import ROOT, Daemon, daemon_process
from tests.integrations.test_browsergym import decide_every_request

GOAL = "Search the shop for a USB-C cable"
CHECKLIST = "Checklist 1: Search the shop for a USB-C cable"
EXAMPLE = ROOT / "examples" / "agentlab_rewards.py"


@pytest.fixture(autouse=True)
def offline_loop(monkeypatch: pytest.MonkeyPatch, daemon: Daemon) -> None:
    """The agent takes its token from the environment (never from the pickled args). AgentLab's
    loop counts each observation string's tokens with tiktoken's gpt-4 encoding, which tiktoken
    downloads on first use: with no network the tests count words instead."""
    monkeypatch.setenv("WEBSHEPHERD_TOKEN", daemon.token)
    monkeypatch.setattr(agentlab_loop, "count_tokens", lambda text: len(text.split()))


def bid(text: str, role: str, name: str = "") -> str:
    found = re.search(rf"\[(\w+)\] {role} '{name}", text)
    assert found, f"no {role} {name!r} in the page"
    return found.group(1)


def script(obs: dict[str, Any], step: int) -> list[tuple[str, str]]:
    """The (think, action) proposals for a step: duplicates on purpose (best-of-n counts)."""
    text = obs["axtree_txt"]
    if step == 0:
        box = bid(text, "searchbox")
        return [
            ("Type into the search box.", f"fill('{box}', 'usb-c cable')"),
            ("The deals may have one.", f"click('{bid(text, 'link', 'Deals')}')"),
            ("Type it again.", f'fill("{box}",  "usb-c cable")'),
        ]
    return [("Look further down.", "scroll(0, 200)"), ("Wait a little.", "noop(10)")]


class ScriptedAgent(Agent):
    """Keeps BrowserGym's flattening of each raw page in its obs (the test's reference)."""

    def __init__(self) -> None:
        self.actions: list[str] = []

    def obs_preprocessor(self, obs: dict[str, Any]) -> Any:
        out = default_obs_preprocessor(obs)
        out["reference_axtree"] = observation_text(obs)
        return out


class MultiCandidateAgent(ScriptedAgent):
    """AgentLab's multi-candidate interface, proposals from the script, hints recorded."""

    def get_candidate_generations(
        self, obs: dict[str, Any], hint: list[str] | None = None, n_candidates: int = 3
    ) -> list[dict[str, Any]]:
        proposals = script(obs, len(self.actions))[:n_candidates]
        if hint:  # a refined round: the search first
            proposals = sorted(proposals, key=lambda p: "click" not in p[1])
        extra = {"hint": hint, "actions_before": len(self.actions)}
        return [
            {"action": a, "agent_info": AgentInfo(think=t, extra_info=dict(extra))}
            for t, a in proposals
        ]

    def update_agent_state_from_selected_candidate(self, output: dict[str, Any]) -> None:
        self.actions.append(output["action"])

    def get_action(self, obs: Any) -> tuple[str, AgentInfo]:
        first = self.get_candidate_generations(obs)[0]
        self.update_agent_state_from_selected_candidate(first)
        return first["action"], first["agent_info"]


SAMPLES = itertools.count()


class SamplingAgent(ScriptedAgent):
    """A plain agent: each get_action call takes the next proposal of the step's script."""

    def get_action(self, obs: Any) -> tuple[str, AgentInfo]:
        proposals = script(obs, len(self.actions))
        think, action = proposals[next(SAMPLES) % len(proposals)]
        self.actions.append(action)
        info = {"think": think, "extra_info": {"actions_before": len(self.actions) - 1}}
        return action, AgentInfo(**info)


@dataclass
class ScriptedArgs(AgentArgs):
    agent_name: str = "Scripted"
    multi_candidate: bool = True
    benchmark: Any = None
    reproducible: bool = False

    def make_agent(self) -> Agent:
        return MultiCandidateAgent() if self.multi_candidate else SamplingAgent()

    def set_benchmark(self, benchmark: Any, demo_mode: bool) -> None:
        self.benchmark = (benchmark, demo_mode)

    def set_reproducibility_mode(self) -> None:
        self.reproducible = True


def run(
    agent_args: RewardGuidedAgentArgs, shop: ShopServer, root: Path
) -> tuple[list[StepInfo], dict[str, Any]]:
    task = {"start_url": shop.url, "goal": GOAL}
    exp = ExpArgs(
        agent_args=agent_args,
        env_args=EnvArgs("openended", task_seed=0, max_steps=2, task_kwargs=task),
        save_screenshot=False,
    )
    exp.prepare(root)
    exp.run()
    assert exp.err_msg is None, exp.stack_trace
    agent_args.close()
    result = get_exp_result(exp.exp_dir)
    return result.steps_info, result.summary_info


def history(daemon: Daemon, session_id: str) -> list[dict[str, Any]]:
    with Client(daemon.url, daemon.token) as client:
        return client.session(session_id).events


def recorded_observations(events: list[dict[str, Any]]) -> list[str]:
    texts = []
    for event in events:
        if event.get("type") == "session.started" and event.get("observation"):
            texts.append(event["observation"]["axtree"])
        elif event.get("type") == "observed":
            texts.append(event["axtree"])
    return texts


def rewards_of(event: dict[str, Any]) -> list[float | None]:
    by_index = {r["index"]: r["reward"] for r in event["results"]}
    return [by_index.get(i) for i in range(len(by_index))]


def test_best_of_n_rewards_in_agent_info_and_every_page_recorded(
    shop: ShopServer, daemon: Daemon, tmp_path: Path
) -> None:
    args = RewardGuidedAgentArgs(
        subagent_args=ScriptedArgs(), n_candidates=3, checklist=CHECKLIST, url=daemon.url
    )
    assert args.agent_name == "WS-Scripted"
    steps, summary = run(args, shop, tmp_path)
    acted = [s for s in steps if s.action is not None]
    assert len(acted) == 2
    ws = [s.agent_info.extra_info["webshepherd"] for s in acted]
    session_id = ws[0]["session_id"]
    events = history(daemon, session_id)
    # every page the loop saw, as BrowserGym flattens it, in order: the session's observations
    assert recorded_observations(events) == [s.obs["reference_axtree"] for s in steps]
    scored = [e for e in events if e.get("type") == "scored"]
    assert len(scored) == 2  # one request per step, all candidates in it
    assert ws[0]["counts"] == [2, 1]  # the duplicate fill, counted once, scored once
    for step, info, event in zip(acted, ws, scored, strict=True):
        rewards = rewards_of(event)
        assert info["rewards"] == rewards
        expected = select(rewards, info["counts"], list(range(len(rewards))))
        assert info["index"] == expected  # the paper's best-of-n rule on the daemon's rewards
        assert action_key(step.action) == action_key(info["candidates"][expected])
        # AgentLab's own structures: stats (aggregated), markdown page (XRay), extra_info
        assert step.stats["ws_reward"] == rewards[expected]
        assert step.stats["ws_latency_s"] > 0
        assert "| 0 |" in step.agent_info.markdown_page and "**picked**" in (
            step.agent_info.markdown_page
        )
        assert f"session `{session_id}`" in step.agent_info.markdown_page
        assert CHECKLIST.splitlines()[0] in step.agent_info.markdown_page
        if rewards[expected] is not None:  # per-item probabilities of a parsed judgement
            assert {"yes", "in_progress", "no"} <= set(info["checklist"][0])
        assert step.agent_info.extra_info["actions_before"] == step.step  # state: once a step
    executed = [e["action"] for e in events if e.get("type") == "action"]
    assert executed == [s.action for s in acted]
    assert steps[1].obs["last_action"] == acted[0].action  # the env ran the pick
    assert summary["stats.max_ws_latency_s"] == max(s.stats["ws_latency_s"] for s in acted)
    # the episode's result as AgentLab recorded it: max_steps reached, the env not terminated
    assert summary["truncated"] and not summary["terminated"]
    assert events[-1]["type"] == "session.ended" and events[-1]["outcome"] == "unknown"
    assert events[-1]["answer"] == (
        "interrupted mid-episode: the env did not terminate (cum_reward 0)"
    )


def test_refine_sends_the_judges_feedback_as_the_hint(
    shop: ShopServer, daemon: Daemon, tmp_path: Path
) -> None:
    args = RewardGuidedAgentArgs(
        subagent_args=ScriptedArgs(),
        n_candidates=2,
        select="refine",
        refine_below=1.01,  # every reward is below: each step is refined once
        checklist=CHECKLIST,
        url=daemon.url,
    )
    steps, _ = run(args, shop, tmp_path)
    acted = [s for s in steps if s.action is not None]
    events = history(daemon, acted[0].agent_info.extra_info["webshepherd"]["session_id"])
    scored = [e for e in events if e.get("type") == "scored"]
    assert len(scored) == 4  # two rounds a step
    for n, step in enumerate(acted):
        first = scored[2 * n]
        pick = select(rewards_of(first), [1] * len(first["results"]), list(range(2)))
        feedback = next(r["feedback"] for r in first["results"] if r["index"] == pick)
        ws = step.agent_info.extra_info["webshepherd"]
        assert ws["rounds"] == 2 and ws["hint"] == [f"Judge's feedback: {feedback}"]
        assert step.agent_info.extra_info["hint"] == ws["hint"]  # what the subagent got
        assert ws["rewards"] == rewards_of(scored[2 * n + 1])  # picked from the second round
        assert step.agent_info.extra_info["actions_before"] == n
        assert "### Round 2 (hint: Judge's feedback:" in step.agent_info.markdown_page


def test_a_rejected_action_does_not_run(shop: ShopServer, daemon: Daemon, tmp_path: Path) -> None:
    done = threading.Event()
    monitor = decide_every_request(daemon, "reject", done)
    args = RewardGuidedAgentArgs(
        subagent_args=ScriptedArgs(multi_candidate=False),
        n_candidates=3,
        approval_threshold=1.01,  # every pick waits for the monitor, which rejects
        checklist=CHECKLIST,
        url=daemon.url,
    )
    try:
        steps, _ = run(args, shop, tmp_path)
    finally:
        done.set()
        monitor.join(10)
    acted = [s for s in steps if s.action is not None]
    for step in acted:
        ws = step.agent_info.extra_info["webshepherd"]
        assert ws["decision"] == "rejected" and step.action == REJECTED_ACTION
        assert step.agent_info.extra_info["actions_before"] == 0  # the rejected state is dropped
    assert {s.obs["url"] for s in steps} == {steps[0].obs["url"]}  # nothing was clicked
    assert len({s.obs["reference_axtree"] for s in steps}) == 1  # nor typed
    events = history(daemon, acted[0].agent_info.extra_info["webshepherd"]["session_id"])
    requests = [e for e in events if e.get("type") == "approval.request"]
    # every candidate was asked for in turn, best first, before the agent gave up: noop()
    asked = [len(s.agent_info.extra_info["webshepherd"]["candidates"]) for s in acted]
    assert len(requests) == sum(asked)
    for step in acted:
        refused = step.agent_info.extra_info["webshepherd"]["refused"]
        assert len(refused) == len(step.agent_info.extra_info["webshepherd"]["candidates"])
        assert all(r["decider"] == "person" and r["note"] == "not this link" for r in refused)
    assert [e["action"] for e in events if e.get("type") == "action"] == [REJECTED_ACTION] * 2


def reject_first_of_each_pair(daemon: Daemon, done: threading.Event) -> threading.Thread:
    """A paired monitor that rejects the 1st, 3rd, ... approval request and approves the
    others: each step's best is refused, the next asked for is let run."""
    client = Client(daemon.url, daemon.token, role="monitor", name="test-monitor")
    client.connect()
    client.pair(daemon.monitor_code, "test-monitor")
    sub = client.subscribe()

    def run() -> None:
        n = 0
        try:
            while not done.is_set():
                try:
                    event = sub.get(timeout=0.5)
                except TimeoutError:
                    continue
                if event.type == "approval.request":
                    n += 1
                    verdict = "reject" if n % 2 else "approve"
                    client.decide(event.request_id, verdict, note="not the best one")  # type: ignore[arg-type]
        finally:
            client.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_refused_best_falls_back_to_the_next_best_candidate(
    shop: ShopServer, daemon: Daemon, tmp_path: Path
) -> None:
    """The best candidate refused by a person: the next by reward runs (not noop()), and the
    subagent's next hint says who refused what and why."""
    done = threading.Event()
    monitor = reject_first_of_each_pair(daemon, done)
    args = RewardGuidedAgentArgs(
        subagent_args=ScriptedArgs(),
        n_candidates=3,
        approval_threshold=1.01,  # every candidate that would run is asked for
        checklist=CHECKLIST,
        url=daemon.url,
    )
    try:
        steps, _ = run(args, shop, tmp_path)
    finally:
        done.set()
        monitor.join(10)
    acted = [s for s in steps if s.action is not None]
    assert len(acted) == 2
    for step in acted:
        ws = step.agent_info.extra_info["webshepherd"]
        best = ws["index"]
        others = [i for i in range(len(ws["candidates"])) if i != best]
        # the next best: highest reward, then most proposed, then proposed first
        rank = {i: (ws["rewards"][i] or -1.0, ws["counts"][i], -i) for i in others}
        nxt = max(others, key=lambda i: rank[i])
        assert ws["ran"] == nxt and step.action == ws["candidates"][nxt] != REJECTED_ACTION
        (refused,) = ws["refused"]
        assert refused["action"] == ws["candidates"][best] and refused["decider"] == "person"
        assert refused["text"].startswith(
            f"{ws['candidates'][best]}: refused by person monitor:test-monitor (mode ask): "
            "not the best one"
        )
        assert ws["decision"] == "approved"
    hint = acted[1].agent_info.extra_info["hint"]  # what the subagent got on the next step
    assert hint == [acted[0].agent_info.extra_info["webshepherd"]["refused"][0]["text"]]
    assert steps[1].obs["last_action"] == acted[0].action  # the env ran the fallback


def test_a_judging_failure_is_a_reward_none_with_a_reason(
    shop: ShopServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A judge that writes no checklist the daemon parses (no reference given): rewards None,
    the reason in extra_info, the subagent's most proposed action runs; no error."""
    spec = {"judge": {"default": [0.5, [1], "fine"]}}
    with daemon_process(tmp_path / "scripted", spec) as scripted:
        monkeypatch.setenv("WEBSHEPHERD_URL", scripted.url)  # no url in the args
        args = RewardGuidedAgentArgs(subagent_args=ScriptedArgs(), n_candidates=3)
        steps, summary = run(args, shop, tmp_path / "exp")
        events = history(scripted, steps[0].agent_info.extra_info["webshepherd"]["session_id"])
    acted = [s for s in steps if s.action is not None]
    assert len(acted) == 2 and summary["err_msg"] is None
    for step in acted:
        ws = step.agent_info.extra_info["webshepherd"]
        assert ws["rewards"] == [None] * len(ws["candidates"]) and ws["reward"] is None
        assert ws["reason"].startswith("the judge gave no judgement: ") and ws["index"] == 0
        assert step.action == ws["candidates"][0]  # the most proposed
        assert "*Not judged: the judge gave no judgement" in step.agent_info.markdown_page
    assert acted[0].action.startswith("fill(")  # proposed twice
    assert [e["action"] for e in events if e.get("type") == "action"] == [s.action for s in acted]


def test_benchmark_and_reproducibility_delegate_to_the_subagent() -> None:
    sub = ScriptedArgs()
    args = RewardGuidedAgentArgs(subagent_args=sub)
    args.set_benchmark("miniwob", True)
    args.set_reproducibility_mode()
    assert sub.benchmark == ("miniwob", True) and sub.reproducible
    with pytest.raises(ValueError, match="select"):
        RewardGuidedAgentArgs(subagent_args=sub, select="worst")


def test_the_readme_example_runs(
    shop: ShopServer, daemon: Daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = importlib.util.spec_from_file_location("agentlab_rewards", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    monkeypatch.setenv("WEBSHEPHERD_URL", daemon.url)
    exp = example.main(ScriptedArgs(), shop.url, str(tmp_path))
    assert exp.err_msg is None, exp.stack_trace
    exp.agent_args.close()
    steps = get_exp_result(exp.exp_dir).steps_info
    acted = [s for s in steps if s.action is not None]
    assert len(acted) == 8  # the example's max_steps: the openended task never ends by itself
    for step in acted:
        assert "ws_reward" in step.stats and step.agent_info.extra_info["webshepherd"]["rounds"]


async def recorded_sessions(daemon: Daemon) -> list[SessionSummary]:
    async with AsyncClient(daemon.url, daemon.token) as client:
        return await client.sessions()


def test_the_example_as_a_script_orders_the_cheapest_cable_and_leaves_no_files(
    daemon: Daemon, tmp_path: Path
) -> None:
    """``python examples/agentlab_rewards.py`` against the serve its docstring names (the tiny
    judge, the shop's loopback origin a sandbox): it starts the shop, each pick is the best
    reward, which is the scripted shopper's progress, the cheapest cable is ordered, the session
    is ended in the recording, and the run leaves nothing in its TMPDIR (playwright's browser
    link and AgentLab's results included: no playwright browser here, so it links one)."""
    sandbox = {"config": {"sandbox_origins": ["http://127.0.0.1:*"]}}
    # a short path: Chromium's singleton socket under TMPDIR must fit a socket address
    tmp = Path(tempfile.mkdtemp(prefix="ws-tmp-", dir="/tmp"))
    try:
        run_and_check_the_example(tmp, tmp_path, sandbox)
    finally:
        shutil.rmtree(tmp)


def run_and_check_the_example(tmp: Path, tmp_path: Path, sandbox: dict[str, Any]) -> None:
    with daemon_process(tmp_path / "sandbox", sandbox) as served:
        env = {**os.environ, "WEBSHEPHERD_URL": served.url, "WEBSHEPHERD_TOKEN": served.token}
        env["TMPDIR"] = str(tmp)
        env["PLAYWRIGHT_BROWSERS_PATH"] = str(tmp_path / "no-browsers")  # playwright has none
        argv = [sys.executable, str(EXAMPLE)]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        said = [line for line in done.stderr.splitlines() if "[pid=" not in line]  # no Chromium
        assert done.returncode == 0, "\n".join(said)[-3000:]
        sessions = asyncio.run(recorded_sessions(served))
    assert len(sessions) == 1 and sessions[0].ended_at is not None, sessions
    assert sorted(tmp.iterdir()) == [], "the example left files behind"
    assert not (tmp_path / "no-browsers").exists()
    lines = done.stdout.splitlines()
    steps = [(lines[i], lines[i + 1]) for i, line in enumerate(lines) if line.startswith("step ")]
    assert [s.split(":")[0] for s, _ in steps] == [f"step {n}" for n in range(8)], done.stdout
    scored = re.compile(r"(\S+\(.*?\)) (\d\.\d\d|none)(?:, |$)")
    for line, picked in steps:
        pairs = scored.findall(line.split(": ", 1)[1])
        best = max(pairs, key=lambda p: -1.0 if p[1] == "none" else float(p[1]))
        assert picked == f"  picked {best[0]} (reward {best[1]})", done.stdout
    assert re.fullmatch(r"  picked fill\('\w+', 'usb-c cable'\) \(reward \S+\)", steps[0][1])
    assert steps[-1][1].startswith("  picked send_msg_to_user('Order VW-1001 is placed.')")
    want = variant(0).target()["name"]
    assert lines[-2:] == [f"orders: [[{want!r}]]", "results: removed (--exp-root DIR keeps them)"]


AWAY = "goto('http://127.0.0.2:9/away')"


class AwayOrScroll(MultiCandidateAgent):
    """Proposes leaving the site (which a guard rule holds) and a scroll, every step."""

    def get_candidate_generations(
        self, obs: dict[str, Any], hint: list[str] | None = None, n_candidates: int = 3
    ) -> list[dict[str, Any]]:
        extra = {"hint": hint, "actions_before": len(self.actions)}
        return [
            {"action": a, "agent_info": AgentInfo(think=t, extra_info=dict(extra))}
            for t, a in (("Leave for the other site.", AWAY), ("Look down.", "scroll(0, 200)"))
        ]


@dataclass
class AwayArgs(ScriptedArgs):
    agent_name: str = "Away"

    def make_agent(self) -> Agent:
        return AwayOrScroll()


def test_a_guarded_best_refused_with_nobody_paired_falls_back(
    shop: ShopServer, tmp_path: Path
) -> None:
    """The judge rates leaving the site best; the guard holds it (leaves_origin) and, nobody
    being paired, refuses it: the unguarded scroll runs, and the hint names the guard."""
    spec = {"judge": {"actions": {AWAY: [0.9, [2], "go"], "scroll(0, 200)": [0.4, [1], "ok"]}}}
    with daemon_process(tmp_path / "scripted", spec) as scripted:
        args = RewardGuidedAgentArgs(
            subagent_args=AwayArgs(), n_candidates=2, checklist=CHECKLIST, url=scripted.url
        )
        steps, _ = run(args, shop, tmp_path / "exp")
    acted = [s for s in steps if s.action is not None]
    assert [s.action for s in acted] == ["scroll(0, 200)"] * 2
    for step in acted:
        ws = step.agent_info.extra_info["webshepherd"]
        assert ws["candidates"][ws["index"]] == AWAY and ws["rewards"][ws["index"]] == 0.9
        (refused,) = ws["refused"]
        assert refused["decider"] == "guard" and refused["guard"] == ["leaves_origin"]
        assert refused["text"].startswith(f"{AWAY}: refused by guard (guard leaves_origin): ")
        assert "— way out: `serve --no-guard leaves_origin`" in refused["text"]
    assert acted[1].agent_info.extra_info["hint"] == [
        acted[0].agent_info.extra_info["webshepherd"]["refused"][0]["text"]
    ]
    assert {s.obs["url"] for s in steps} == {steps[0].obs["url"]}  # never left the shop
