"""BrowserGym's real env on the bundled shop, wrapped by ProcessRewardWrapper, scored by a real
daemon (tiny model): the recording, the rewards in ``info``, approval that rejects."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from browsergym.core.env import BrowserEnv
from browsergym.core.task import OpenEndedTask
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.variants import variant
from webshepherd.integrations.browsergym import (
    INFO_KEYS,
    ProcessRewardWrapper,
    observation_text,
)
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.client.sync import Client
from webshepherd.protocol.common import SessionSummary

from tests.fixtures.write_pages import FETCH_POST, MINIWOB_SUBMIT, WriteServers
from tests.integrations.conftest import CHECKLIST, CHROMIUM, ROOT, Daemon, daemon_process

GOAL = "Search the shop for a USB-C cable"


def make_env(shop: ShopServer) -> BrowserEnv:
    return BrowserEnv(
        task_entrypoint=OpenEndedTask,
        task_kwargs={"start_url": shop.url, "goal": GOAL},
        headless=True,
        pw_chromium_kwargs={"executable_path": CHROMIUM},
    )


def bid(obs: dict[str, Any], role: str, name: str = "") -> str:
    found = re.search(rf"\[(\w+)\] {role} '{name}", observation_text(obs))
    assert found, f"no {role} {name!r} in the page"
    return found.group(1)


def recorded_observations(daemon: Daemon, session_id: str) -> list[str]:
    with Client(daemon.url, daemon.token) as client:
        history = client.session(session_id)
    texts = []
    for event in history.events:
        if event.get("type") == "session.started" and event.get("observation"):
            texts.append(event["observation"]["axtree"])
        elif event.get("type") == "observed":
            texts.append(event["axtree"])
    return texts


def test_rewards_in_info_and_every_observation_recorded(shop: ShopServer, daemon: Daemon) -> None:
    env = ProcessRewardWrapper(
        make_env(shop), url=daemon.url, token=daemon.token, checklist=CHECKLIST
    )
    seen: list[str] = []
    try:
        obs, info = env.reset()
        session_id = info["webshepherd"]["session_id"]
        seen.append(observation_text(obs))
        box = bid(obs, "searchbox")
        env.set_thought(f"The search box is [{box}].")
        obs, _, _, _, info = env.step(f"fill('{box}', 'usb-c cable')")
        seen.append(observation_text(obs))
        ws = info["webshepherd"]
        assert ws["session_id"] == session_id and ws["decision"] == "auto"
        assert ws["reward"] is None or 0.0 <= ws["reward"] <= 1.0
        assert set(ws) <= set(INFO_KEYS) and isinstance(ws["feedback"], str)
        # named for what they hold: the checklist's items, and the executed action's per-item
        # label probabilities at the scored step
        assert ws["checklist"] == [line.split(": ", 1)[1] for line in CHECKLIST.splitlines()]
        probs = ws["item_probabilities"]
        assert ws["reward"] is None or [p["index"] for p in probs] == [1, 2]
        assert all(abs(p["yes"] + p["in_progress"] + p["no"] - 1) < 1e-6 for p in probs)
        assert isinstance(ws["step"], int)
        assert env.unwrapped.page.input_value(f"[bid='{box}']") == "usb-c cable"
        obs, _, _, _, info = env.step(f"click('{bid(obs, 'button', 'Search')}')")
        seen.append(observation_text(obs))
        assert "results" in obs["url"] or "q=" in obs["url"]
        index, best = env.choose([("Open a product.", "click('9999')"), ("Go back.", "go_back()")])
        assert index in (0, 1) and len(best.rewards) == 2
    finally:
        env.close()
    recorded = recorded_observations(daemon, session_id)
    assert recorded == seen  # each step's observation: BrowserGym's flattening of that page
    assert all("InlineTextBox" not in text for text in recorded)


def decide_every_request(daemon: Daemon, decision: str, done: threading.Event) -> threading.Thread:
    """A monitor that answers every approval request with ``decision``."""
    client = Client(daemon.url, daemon.token, role="monitor", name="test-monitor")
    client.connect()
    client.pair(daemon.monitor_code, "test-monitor")  # a person's tool: paired to decide
    sub = client.subscribe()

    def run() -> None:
        try:
            while not done.is_set():
                try:
                    event = sub.get(timeout=0.5)
                except TimeoutError:
                    continue
                if event.type == "approval.request":
                    client.decide(event.request_id, decision, note="not this link")  # type: ignore[arg-type]
        finally:
            client.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_rejected_action_does_not_run(shop: ShopServer, daemon: Daemon) -> None:
    done = threading.Event()
    monitor = decide_every_request(daemon, "reject", done)
    env = ProcessRewardWrapper(
        make_env(shop), url=daemon.url, token=daemon.token, approval="always", checklist=CHECKLIST
    )
    try:
        obs, _ = env.reset()
        start = env.unwrapped.page.url
        obs, reward, terminated, _, info = env.step(f"click('{bid(obs, 'link', 'Deals')}')")
        assert info["webshepherd"]["decision"] == "rejected"
        assert obs["last_action_error"].startswith("refused by person monitor:test-monitor (")
        assert env.unwrapped.page.url == start  # the link was never clicked
        assert (reward, terminated) == (0.0, False)
    finally:
        done.set()
        env.close()
        monitor.join(10)


async def recorded_sessions(daemon: Daemon) -> list[SessionSummary]:
    async with AsyncClient(daemon.url, daemon.token) as client:
        return await client.sessions()


def test_the_example_orders_the_cheapest_cable_offline_and_leaves_no_files(
    tmp_path: Path,
) -> None:
    """``python examples/browsergym_rewards.py`` against the serve its docstring names (the tiny
    judge, the shop's loopback origin a sandbox) with no playwright browser of its own: its
    ``use_chromium()`` links Debian's Chromium for BrowserGym's chat window (in the user's
    cache, not TMPDIR), it starts the shop, each step runs the
    best-rewarded proposal, which is the scripted shopper's progress, the cheapest cable is
    ordered (the browser's held POSTs flagged, not refused), the session is ended, and the
    run's TMPDIR is left empty."""
    sandbox = {"config": {"sandbox_origins": ["http://127.0.0.1:*"]}}
    # a short path: Chromium's singleton socket under TMPDIR must fit a socket address
    tmp = Path(tempfile.mkdtemp(prefix="ws-tmp-", dir="/tmp"))
    try:
        with daemon_process(tmp_path / "sandbox", sandbox) as served:
            env = dict(os.environ, WEBSHEPHERD_URL=served.url, WEBSHEPHERD_TOKEN=served.token)
            env |= {"CHROMIUM": CHROMIUM, "TMPDIR": str(tmp)}
            env["PLAYWRIGHT_BROWSERS_PATH"] = str(tmp_path / "no-browsers")  # none of its own
            env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # where use_chromium links it
            argv = [sys.executable, str(ROOT / "examples" / "browsergym_rewards.py")]
            run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240)
            said = [line for line in run.stderr.splitlines() if "[pid=" not in line]
            assert run.returncode == 0, "\n".join(said)[-3000:]
            sessions = asyncio.run(recorded_sessions(served))
        left = sorted(tmp.iterdir())
    finally:
        shutil.rmtree(tmp)
    assert len(sessions) == 1 and sessions[0].ended_at is not None, sessions
    assert left == [], "the example left files behind"
    (link,) = (tmp_path / "cache" / "webshepherd" / "ms-playwright").glob("chromium-*/*/*")
    assert link.is_symlink() and link.resolve() == Path(CHROMIUM).resolve()
    lines = run.stdout.splitlines()
    steps = [(lines[i], lines[i + 1]) for i, line in enumerate(lines) if line.startswith("step ")]
    assert [s.split(":")[0] for s, _ in steps] == [f"step {n}" for n in range(1, 9)], run.stdout
    scored = re.compile(r"(\S+\(.*?\)) (\d\.\d\d|none)(?:, |$)")
    for line, ran in steps:
        pairs = scored.findall(line.split(": ", 1)[1])
        best = max(pairs, key=lambda p: -1.0 if p[1] == "none" else float(p[1]))
        assert ran == f"  ran {best[0]} (reward {best[1]})", run.stdout
    assert re.fullmatch(r"  ran fill\('\w+', 'usb-c cable'\) \(reward \S+\)", steps[0][1])
    assert steps[-1][1].startswith("  ran send_msg_to_user('Order VW-1001 is placed.')")
    assert lines[-1] == f"orders: [[{variant(0).target()['name']!r}]]", run.stdout


def test_the_env_as_an_agent_environment_resets_to_its_start(shop: ShopServer) -> None:
    """BrowserGymEnvironment: what the agent loop (tree search too) drives; no daemon here."""
    import asyncio

    from webshepherd.integrations.browsergym import BrowserGymEnvironment
    from webshepherd.protocol.agents import ActionError, Environment

    env = BrowserGymEnvironment(make_env(shop), seed=0)

    async def run() -> None:
        assert isinstance(env, Environment)
        start = await env.observe()
        assert start.url.startswith(shop.url) and "Search" in start.axtree
        box = re.search(r"\[(\w+)\] searchbox", start.axtree)
        assert box
        await env.execute(f"fill('{box.group(1)}', 'usb-c cable')")
        await env.execute("press('" + box.group(1) + "', 'Enter')")
        assert "/search" in (await env.observe()).url
        try:
            await env.execute("click('no-such-bid')")
            raise AssertionError("the action ran")
        except ActionError as exc:
            assert "no-such-bid" in exc.message
        done = await env.execute("send_msg_to_user('found them')")
        assert done.done and done.message == "found them"
        await env.reset()
        again = await env.observe()
        assert again.url.rstrip("/") == start.url.rstrip("/") and again.last_action_error is None

    def stop_playwright() -> None:  # BrowserGym's, started on the env's thread: stopped there
        import browsergym.core

        pw, browsergym.core._PLAYWRIGHT = browsergym.core._PLAYWRIGHT, None
        if pw is not None:
            pw.stop()

    async def main() -> None:
        try:
            await run()
        finally:
            await env._call(env.env.close)
            await env._call(stop_playwright)
            await env.close()

    asyncio.run(main())


# -- issue 41 and 44: the browser holds what commits; refusals keep the env whole ------------


class ClickTask(OpenEndedTask):
    """A page whose ``#go`` ends the episode with ``reward`` once ``#out`` reads "done" (the
    MiniWoB-like Submit page): an episode that terminates, with the env's own reward."""

    def __init__(self, seed: int, start_url: str, goal: str, reward: float = 1.0) -> None:
        super().__init__(seed, start_url, goal)
        self.reward = reward

    def validate(self, page: Any, chat_messages: list[Any]) -> tuple[float, bool, str, dict]:
        done = page.text_content("#out") == "done"
        return (self.reward if done else 0.0), done, "", {"clicked": done}


def page_env(url: str, task: Any = OpenEndedTask, **kwargs: Any) -> BrowserEnv:
    return BrowserEnv(
        task_entrypoint=task,
        task_kwargs={"start_url": url, "goal": "Click the button.", **kwargs},
        headless=True,
        pw_chromium_kwargs={"executable_path": CHROMIUM},
    )


def go(obs: dict[str, Any], env: Any) -> str:
    """The BrowserGym action that clicks the page's trigger (``#go``)."""
    return f"click('{env.unwrapped.page.get_attribute('#go', 'bid')}')"


def ended(daemon: Daemon, session_id: str) -> dict[str, Any]:
    with Client(daemon.url, daemon.token) as client:
        events = client.session(session_id).events
    return next(e for e in events if e.get("type") == "session.ended")


def test_a_write_is_held_in_the_browser_and_never_reaches_the_server(daemon: Daemon) -> None:
    """The defaults (mode ask) and nobody paired: a button's fetch POST is refused by the
    daemon before it leaves; the step says who refused it, why and the way out."""
    with WriteServers() as servers:
        env = ProcessRewardWrapper(
            page_env(servers.url(FETCH_POST)), url=daemon.url, token=daemon.token,
            checklist=CHECKLIST,
        )  # fmt: skip
        try:
            obs, info = env.reset()
            obs, reward, terminated, _, info = env.step(go(obs, env))
            env.unwrapped.page.wait_for_function(
                "document.getElementById('out').textContent !== ''"
            )
            out = env.unwrapped.page.text_content("#out")
        finally:
            env.close()
        assert servers.count(FETCH_POST.held[0]) == 0  # it never left the browser
    assert out is not None and out.startswith("failed")  # the page's fetch failed
    ws = info["webshepherd"]
    assert ws["decision"] == "auto"  # the daemon's rules predict only: the click ran
    (commit,) = ws["commits"]
    assert (commit["method"], commit["kind"], commit["refused"]) == ("POST", "write", True)
    assert commit["decider"] == "daemon" and commit["mode"] == "ask"
    assert commit["url"].endswith("/api/order") and "no person is paired" in commit["note"]
    assert "--sandbox-origin" in commit["way_out"]
    error = obs["last_action_error"]
    assert error.startswith("refused by daemon (mode ask): this sends a POST to 127.0.0.1:")
    assert "— way out: `serve --sandbox-origin" in error and "person " not in error.split(":")[0]
    assert "task_info" in info and (reward, terminated) == (0.0, False)


def test_a_submit_that_only_runs_script_runs(daemon: Daemon) -> None:
    """A MiniWoB-like "Submit" that sends nothing runs whatever it is called."""
    with WriteServers() as servers:
        env = ProcessRewardWrapper(
            page_env(servers.url(MINIWOB_SUBMIT)), url=daemon.url, token=daemon.token,
            checklist=CHECKLIST,
        )  # fmt: skip
        try:
            obs, _ = env.reset()
            assert "button 'Submit'" in observation_text(obs)
            obs, _, _, _, info = env.step(go(obs, env))
            assert env.unwrapped.page.text_content("#out") == "done"
        finally:
            env.close()
    ws = info["webshepherd"]
    assert ws["decision"] == "auto" and ws["commits"] == [] and "refused" not in ws
    assert not obs["last_action_error"]


def test_outcomes_are_the_envs_recorded_at_reset_with_the_env_reused(daemon: Daemon) -> None:
    """Success (terminated, reward > 0), failure (terminated, reward 0), unknown
    (interrupted): each episode's session ends with the env's own result."""
    with WriteServers() as servers:
        env = ProcessRewardWrapper(
            page_env(servers.url(MINIWOB_SUBMIT), ClickTask, reward=1.0),
            url=daemon.url,
            token=daemon.token,
            checklist=CHECKLIST,
        )
        sessions = []
        try:
            for reward in (1.0, 0.0, None):
                if reward is not None:
                    env.unwrapped.task_kwargs["reward"] = reward
                obs, info = env.reset()
                sessions.append(info["webshepherd"]["session_id"])
                if reward is not None:
                    obs, got, terminated, _, step_info = env.step(go(obs, env))
                    assert (got, terminated) == (reward, True)
                    assert step_info["task_info"] == {"clicked": True}
        finally:
            env.close()
    results = [ended(daemon, sid) for sid in sessions]
    assert [r["outcome"] for r in results] == ["success", "failure", "unknown"]
    assert results[0]["answer"] == "the env terminated with reward 1.0"
    assert results[2]["answer"].startswith("interrupted mid-episode after 0 steps")


def test_a_refused_step_returns_the_envs_own_last_info(shop: ShopServer, daemon: Daemon) -> None:
    done = threading.Event()
    monitor = decide_every_request(daemon, "reject", done)
    env = ProcessRewardWrapper(
        make_env(shop), url=daemon.url, token=daemon.token, approval="always", checklist=CHECKLIST
    )
    try:
        obs, _ = env.reset()
        obs, _, _, _, info = env.step(f"fill('{bid(obs, 'searchbox')}', 'usb-c cable')")
        before = {k: v for k, v in info.items() if k != "webshepherd"}
        deals = f"click('{bid(obs, 'link', 'Deals')}')"
        obs, _, _, _, info = env.step(deals)
    finally:
        done.set()
        env.close()
        monitor.join(10)
    assert "task_info" in before and {k: v for k, v in info.items() if k != "webshepherd"} == before
    refused = info["webshepherd"]["refused"]
    assert refused["action"] == deals and refused["decider"] == "person"
    assert refused["by"] == "monitor:test-monitor" and refused["note"] == "not this link"
    assert obs["last_action_error"].startswith("refused by person monitor:test-monitor (")


def test_a_judging_failure_is_a_reward_none_with_a_reason(tmp_path: Path) -> None:
    """A judge that writes no checklist the daemon parses (no reference given): the step's
    reward is None, info says why, and the action runs; nothing raises into the loop."""
    spec = {"judge": {"default": [0.5, [1], "fine"]}}
    with daemon_process(tmp_path / "scripted", spec) as scripted, WriteServers() as servers:
        env = ProcessRewardWrapper(
            page_env(servers.url(MINIWOB_SUBMIT)), url=scripted.url, token=scripted.token
        )
        try:
            obs, _ = env.reset()
            obs, _, _, _, info = env.step(go(obs, env))
            assert env.unwrapped.page.text_content("#out") == "done"  # it ran
        finally:
            env.close()
    ws = info["webshepherd"]
    assert ws["reward"] is None and ws["reason"].startswith("the judge gave no judgement: ")
    assert "checklist" in ws["reason"]


def test_the_daemon_is_named_by_webshepherd_url_as_the_client_does(
    daemon: Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEBSHEPHERD_URL", daemon.url)
    monkeypatch.setenv("WEBSHEPHERD_TOKEN", daemon.token)
    with WriteServers() as servers:
        env = ProcessRewardWrapper(page_env(servers.url(MINIWOB_SUBMIT)), checklist=CHECKLIST)
        try:
            assert env.client.url == daemon.url
            _, info = env.reset()
        finally:
            env.close()
    assert ended(daemon, info["webshepherd"]["session_id"])["outcome"] == "unknown"


def test_a_sandbox_origins_write_runs_flagged(tmp_path: Path) -> None:
    """`serve --sandbox-origin` names the pages' origin: the POST leaves, flagged, unheld."""
    with WriteServers() as servers:
        spec = {
            "judge": {"default": [0.5, [1], "fine"]},
            "config": {"sandbox_origins": [servers.home]},
        }
        with daemon_process(tmp_path / "sandboxed", spec) as sandboxed:
            env = ProcessRewardWrapper(
                page_env(servers.url(FETCH_POST)), url=sandboxed.url, token=sandboxed.token,
                checklist=CHECKLIST,
            )  # fmt: skip
            try:
                obs, _ = env.reset()
                obs, _, _, _, info = env.step(go(obs, env))
                servers.wait_for(
                    FETCH_POST.held[0], pump=lambda: env.unwrapped.page.wait_for_timeout(50)
                )
            finally:
                env.close()
    (commit,) = info["webshepherd"]["commits"]
    assert commit["flagged"] and not commit["refused"] and commit["decider"] == "sandbox"
    assert "refused" not in info["webshepherd"] and not obs["last_action_error"]


def test_a_steps_candidates_hold_the_executed_action_once_and_bad_ones_are_refused() -> None:
    from webshepherd.integrations.browsergym import _proposals

    cands, pick = _proposals("click('5')", "The button.", ["click('7')", ("why", 'click("5")')])
    assert [c.action for c in cands] == ["click('7')", 'click("5")'] and pick == 1
    assert cands[1].thought == "why"  # the candidate's own thought stays
    cands, pick = _proposals("click('5')", "The button.", [(None, "scroll(0, 200)")])
    assert [(c.thought, c.action) for c in cands][pick] == ("The button.", "click('5')")
    with pytest.raises(ValueError, match=r"candidates: .* is not an action"):
        _proposals("click('5')", None, ["click('7')", "  "])


# -- issue 48: a checklist per episode, the step to label, the score beside env.step ---------


def checklist_events(daemon: Daemon, session_id: str) -> list[dict[str, Any]]:
    with Client(daemon.url, daemon.token) as client:
        events = client.session(session_id).events
    return [e for e in events if e.get("type") == "checklist"]


def test_a_checklist_per_episode_from_a_list_or_from_the_goal(tmp_path: Path) -> None:
    """``reset(checklist=...)``: a callable gets the episode's goal and the env's task_info
    once the env's reset made them known; a list is that episode's; None lets the judge write
    one; left out, the constructor's. ``info["webshepherd"]`` names the items, the scored step
    and the executed action's probabilities; a label through ``env.session`` is recorded."""
    asked: list[tuple[str, Any]] = []

    def from_goal(goal: str, task_info: Any) -> list[str]:
        asked.append((goal, task_info))
        return [f"Do this: {goal}", "Check the page says done"]

    spec = {"judge": {"default": [0.5, [2, 0], "fine"]}}
    with daemon_process(tmp_path / "scripted", spec) as scripted, WriteServers() as servers:
        env = ProcessRewardWrapper(
            page_env(servers.url(MINIWOB_SUBMIT), ClickTask), url=scripted.url,
            token=scripted.token, checklist=from_goal,
        )  # fmt: skip
        try:
            obs, info = env.reset(seed=3)
            items = ["Do this: Click the button.", "Check the page says done"]
            assert asked == [("Click the button.", {})]
            assert info["webshepherd"]["checklist"] == items
            first = info["webshepherd"]["session_id"]
            obs, _, terminated, _, info = env.step(go(obs, env), candidates=["scroll(0, 200)"])
            ws = info["webshepherd"]
            assert terminated and ws["checklist"] == items and ws["reward"] == 0.5
            assert [p["index"] for p in ws["item_probabilities"]] == [1, 2]
            done, todo = ws["item_probabilities"]  # the scripted judge's levels 2 and 0
            assert done["yes"] > done["no"] and todo["no"] > todo["yes"]
            assert env.session is not None and env.session.session_id == first
            recorded = env.session.label(ws["step"], "scroll(0, 200)", ["no", "no"])
            assert (recorded.session_id, recorded.step) == (first, ws["step"])

            _, info = env.reset(checklist=["Only this"])  # this episode's own
            second = info["webshepherd"]["session_id"]
            assert info["webshepherd"]["checklist"] == ["Only this"] and len(asked) == 1
            _, info = env.reset(checklist=None)  # the judge writes one: this one writes none
            assert info["webshepherd"]["checklist"] is None
            obs, _, _, _, info = env.step(go(obs, env))
            ws = info["webshepherd"]
            assert ws["reward"] is None and ws["checklist"] is None
            _, info = env.reset()  # the constructor's again
            assert len(asked) == 2 and info["webshepherd"]["checklist"] == items

            with pytest.raises(ValueError, match=r"checklist: no items"):
                env.reset(checklist=[])
            with pytest.raises(ValueError, match=r"callable's result for 'Click the button.'"):
                env.reset(checklist=lambda goal, task_info: "one string")
            with pytest.raises(ValueError, match=r"is not an item"):
                env.reset(checklist=["two\nlines"])
        finally:
            env.close()
        (made,) = checklist_events(scripted, first)
        (given,) = checklist_events(scripted, second)
    assert made["source"] == "reference" and [i["title"] for i in made["items"]] == items
    assert given["source"] == "reference" and [i["title"] for i in given["items"]] == ["Only this"]


class ScoredYet(gym.Wrapper):
    """Between the wrapper and the env: at each ``env.step``, whether the daemon has recorded
    the step's ``scored`` event yet (asked on a connection of its own)."""

    def __init__(self, env: Any, daemon: Daemon) -> None:
        super().__init__(env)
        self.daemon = daemon
        self.session_id = ""
        self.seen: list[int] = []

    def step(self, action: str) -> Any:
        with Client(self.daemon.url, self.daemon.token) as client:
            events = client.session(self.session_id).events
        self.seen.append(sum(e.get("type") == "scored" for e in events))
        return self.env.step(action)


def test_the_judge_scores_while_the_env_steps_when_nothing_waits_for_a_person(
    tmp_path: Path,
) -> None:
    """``approval="never"`` with the browser holding commits: the score is sent before
    ``env.step`` and awaited after it (a slow judge has not answered when the env steps);
    with ``approval="auto"``, or ``overlap=False``, the decision comes first. The recording
    is the same."""
    spec = {"judge": {"default": [0.5, [2], "fine"], "delay_s": 2.0}}
    recorded = {}
    with daemon_process(tmp_path / "slow", spec) as slow, WriteServers() as servers:
        for approval, overlap in (("never", True), ("auto", True), ("never", False)):
            probe = ScoredYet(page_env(servers.url(MINIWOB_SUBMIT)), slow)
            env = ProcessRewardWrapper(
                probe, url=slow.url, token=slow.token, checklist=["Click"], approval=approval,
                overlap=overlap,
            )  # fmt: skip
            try:
                obs, info = env.reset()
                probe.session_id = info["webshepherd"]["session_id"]
                assert env.overlaps == (approval == "never" and overlap)
                for _ in range(2):
                    obs, _, _, _, info = env.step(go(obs, env))
                    assert info["webshepherd"]["reward"] == 0.5
            finally:
                env.close()
            with Client(slow.url, slow.token) as client:
                events = client.session(probe.session_id).events
            recorded[approval, overlap] = [e["type"] for e in events if e["type"] != "checklist"]
            if env.overlaps:  # each step's score still under way when the env ran
                assert probe.seen == [0, 1], probe.seen
            else:  # each step's decision first
                assert probe.seen == [1, 2], probe.seen
    assert len({tuple(r) for r in recorded.values()}) == 1, recorded
    first = recorded["never", True]
    assert first.count("scored") == 2 and first.count("action") == 2


def test_use_chromium_lets_browsergym_launch_its_chat_window(tmp_path: Path) -> None:
    """A user's own script, playwright without a browser of its own: BrowserGym's chat window
    fails with "Executable doesn't exist" though the env got ``executable_path``; after
    ``use_chromium()`` the same script runs (the link made in the user's cache)."""
    script = textwrap.dedent(
        f"""
        import sys
        from browsergym.core.env import BrowserEnv
        from browsergym.core.task import OpenEndedTask
        from webshepherd.integrations.browsergym import use_chromium

        exe = use_chromium() if sys.argv[1] == "helped" else {CHROMIUM!r}
        env = BrowserEnv(task_entrypoint=OpenEndedTask, headless=True,
                         task_kwargs={{"start_url": "about:blank", "goal": "look"}},
                         pw_chromium_kwargs={{"executable_path": exe}})
        try:
            env.reset()
            print("chat window up:", env.chat is not None)
        finally:
            env.close()
        """
    )
    env = dict(os.environ, PLAYWRIGHT_BROWSERS_PATH=str(tmp_path / "none"))
    env |= {"XDG_CACHE_HOME": str(tmp_path / "cache"), "CHROMIUM": CHROMIUM}
    argv = [sys.executable, "-c", script]
    runs = {
        how: subprocess.run([*argv, how], env=env, capture_output=True, text=True, timeout=180)
        for how in ("plain", "helped")
    }
    assert runs["plain"].returncode != 0 and "Executable doesn't exist" in runs["plain"].stderr
    assert runs["helped"].returncode == 0, runs["helped"].stderr[-3000:]
    assert runs["helped"].stdout.strip() == "chat window up: True"
    (link,) = (tmp_path / "cache" / "webshepherd" / "ms-playwright").glob("chromium-*/*/*")
    assert link.is_symlink() and link.resolve() == Path(CHROMIUM).resolve()


def test_use_chromium_without_a_chromium_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webshepherd.integrations.browsergym import use_chromium

    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "none"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(FileNotFoundError, match=r"no Chromium for playwright: .*apt install"):
        use_chromium(tmp_path / "no-such-chromium")
    assert os.environ["PLAYWRIGHT_BROWSERS_PATH"] == str(tmp_path / "none")  # left as it was
    assert use_chromium(CHROMIUM) == os.path.realpath(CHROMIUM)
    assert os.environ["PLAYWRIGHT_BROWSERS_PATH"] == str(
        tmp_path / "cache" / "webshepherd" / "ms-playwright"
    )
    assert use_chromium() == str(next((tmp_path / "cache").rglob("chrome")))  # its link now


def test_the_example_refuses_a_page_that_is_not_the_shop(tmp_path: Path) -> None:
    """``python examples/browsergym_rewards.py URL`` on another page: the scripted shopper
    knows only the bundled shop, so the example stops at once, saying so, exit 1, no
    traceback, the session ended."""
    spec = {"judge": {"default": [0.5, [1], "fine"]}}
    with daemon_process(tmp_path / "scripted", spec) as scripted, WriteServers() as servers:
        page = servers.url(MINIWOB_SUBMIT)
        env = dict(os.environ, WEBSHEPHERD_URL=scripted.url, WEBSHEPHERD_TOKEN=scripted.token)
        env |= {"CHROMIUM": CHROMIUM, "XDG_CACHE_HOME": str(tmp_path / "cache")}
        argv = [sys.executable, str(ROOT / "examples" / "browsergym_rewards.py"), page]
        run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240)
        sessions = asyncio.run(recorded_sessions(scripted))
    said = [line for line in run.stderr.splitlines() if "[pid=" not in line]
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert said[-1] == f"stopped at {page}: not a page of the bundled shop", said
    assert len(sessions) == 1 and sessions[0].ended_at is not None
