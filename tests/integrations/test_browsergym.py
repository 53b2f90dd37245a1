"""BrowserGym's real env on the bundled shop, wrapped by ProcessRewardWrapper, scored by a real
daemon (tiny model): the recording, the rewards in ``info``, approval that rejects."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from browsergym.core.env import BrowserEnv
from browsergym.core.task import OpenEndedTask
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.integrations.browsergym import ProcessRewardWrapper, observation_text
from webshepherd.protocol.client.sync import Client

from tests.integrations.conftest import CHECKLIST, CHROMIUM, ROOT, Daemon

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
        assert isinstance(ws["checklist"], list) and isinstance(ws["feedback"], str)
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
        assert obs["last_action_error"].startswith("rejected by webshepherd")
        assert env.unwrapped.page.url == start  # the link was never clicked
        assert (reward, terminated) == (0.0, False)
    finally:
        done.set()
        env.close()
        monitor.join(10)


def test_the_readme_example_runs(shop: ShopServer, daemon: Daemon, tmp_path: Path) -> None:
    env = dict(os.environ, WEBSHEPHERD_URL=daemon.url, WEBSHEPHERD_TOKEN=daemon.token)
    env["CHROMIUM"] = CHROMIUM
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "browsergym_rewards.py"), shop.url],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    session_id, reward = run.stdout.split()
    assert len(session_id) > 8 and (reward == "None" or 0.0 <= float(reward) <= 1.0)


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
