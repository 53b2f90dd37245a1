"""browser-use's real Agent on the bundled shop with a scripted chat model (no network),
attached to a real daemon (tiny model): rewards in the agent's history, the recording, and
refinement that keeps a low-reward action from running."""

from __future__ import annotations

import asyncio
import os
import re
import runpy
import signal
import sys
from typing import Any

import pytest
from browser_use import Agent, BrowserProfile, BrowserSession
from browser_use.llm.views import ChatInvokeCompletion
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.variants import variant
from webshepherd.integrations.browser_use import attach
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.steps import step_number

from tests.fixtures.poll import until
from tests.integrations.conftest import CHECKLIST, CHROMIUM, ROOT, Daemon, daemon_process

TASK = "Search the shop for a USB-C cable"
os.environ["ANONYMIZED_TELEMETRY"] = "false"  # no network


class ScriptedChat:
    """A chat model that plays a fixed plan, reading element indices from the agent's page."""

    model = "scripted"
    _verified_api_keys = True

    def __init__(self) -> None:
        self.agent: Any = None
        self.calls = 0

    @property
    def provider(self) -> str:
        return "scripted"

    @property
    def name(self) -> str:
        return "scripted"

    @property
    def model_name(self) -> str:
        return self.model

    def _index(self, tag: str, **attrs: str) -> int:
        state = self.agent.browser_session._cached_browser_state_summary
        for index, node in state.dom_state.selector_map.items():
            if node.tag_name == tag and all(node.attributes.get(k) == v for k, v in attrs.items()):
                return int(index)
        raise AssertionError(f"no <{tag} {attrs}> on the page")

    async def ainvoke(self, messages: Any, output_format: Any = None, **kwargs: Any) -> Any:
        self.calls += 1
        plan = [
            lambda: {"input": {"index": self._index("input", type="search"), "text": "usb-c"}},
            lambda: {"click": {"index": self._index("button", type="submit")}},
            lambda: {"done": {"text": "Found USB-C cables", "success": True}},
        ]
        action = plan[min(self.calls, len(plan)) - 1]()
        answer = {
            "thinking": f"step {self.calls}",
            "evaluation_previous_goal": "ok",
            "memory": "",
            "next_goal": f"do {next(iter(action))}",
            "action": [action],
        }
        return ChatInvokeCompletion(completion=output_format.model_validate(answer), usage=None)


def make_agent(shop: ShopServer, llm: ScriptedChat, args: list[str] | None = None) -> Agent:
    session = BrowserSession(
        browser_profile=BrowserProfile(
            executable_path=CHROMIUM,
            headless=True,
            keep_alive=True,
            enable_default_extensions=False,
            args=args or [],
        )
    )
    agent = Agent(
        task=TASK,
        llm=llm,
        browser_session=session,
        initial_actions=[{"navigate": {"url": shop.url}}],
        use_judge=False,
        use_vision=False,
        enable_planning=False,
        message_compaction=False,
        directly_open_url=False,
        enable_signal_handler=False,
    )
    llm.agent = agent
    return agent


async def recorded(daemon: Daemon, session_id: str) -> list[str]:
    async with AsyncClient(daemon.url, daemon.token) as client:
        history = await client.session(session_id)
    texts = []
    for event in history.events:
        if event.get("type") == "session.started" and event.get("observation"):
            texts.append(event["observation"]["axtree"])
        elif event.get("type") == "observed":
            texts.append(event["axtree"])
    return texts


async def test_observe_puts_rewards_in_the_history(shop: ShopServer, daemon: Daemon) -> None:
    llm = ScriptedChat()
    agent = make_agent(shop, llm)
    client = AsyncClient(daemon.url, daemon.token)
    handle = await attach(agent, client=client, mode="observe", checklist=CHECKLIST)
    try:
        history = await agent.run(max_steps=4, on_step_end=handle.on_step_end)
        session_id = handle.session_id
    finally:
        await agent.browser_session.kill()
    assert [r.action.split("(")[0] for r in handle.rewards] == ["fill", "click", "send_msg_to_user"]
    metas = [r.metadata["webshepherd"] for i in history.history for r in i.result[:1] if r.metadata]
    assert [m["action"] for m in metas] == [r.action for r in handle.rewards]  # initial: none
    assert all(m["reward"] is None or 0.0 <= m["reward"] <= 1.0 for m in metas)
    assert history.is_done()
    assert session_id is not None
    texts = await recorded(daemon, session_id)
    assert len(texts) == 3 and all(t.startswith("RootWebArea") or "[" in t for t in texts)
    assert "searchbox" in texts[0] and "usb-c" in texts[1]
    assert all("InlineTextBox" not in t for t in texts)
    await client.close()


async def test_refine_keeps_a_low_reward_action_from_running(
    shop: ShopServer, daemon: Daemon
) -> None:
    llm = ScriptedChat()
    agent = make_agent(shop, llm)
    client = AsyncClient(daemon.url, daemon.token)
    handle = await attach(
        agent, client=client, mode="refine", threshold=1.01, checklist=CHECKLIST
    )  # nothing passes
    try:
        history = await agent.run(max_steps=3, on_step_end=handle.on_step_end)
        page = await agent.browser_session.get_current_page_url()
    finally:
        await agent.browser_session.kill()
    assert all(r.replaced for r in handle.rewards) and len(handle.rewards) == 3
    first = history.history[1].result[0]  # [0]: the initial navigation
    assert first.extracted_content.startswith("webshepherd held back fill(")
    assert page.rstrip("/") == shop.url.rstrip("/")  # the search never ran
    await client.close()
    await asyncio.sleep(0)


async def test_the_readme_example_runs(
    shop: ShopServer, daemon: Daemon, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("WEBSHEPHERD_URL", daemon.url)
    monkeypatch.setenv("WEBSHEPHERD_TOKEN", daemon.token)
    monkeypatch.setenv("CHROMIUM", CHROMIUM)
    example = runpy.run_path(str(ROOT / "examples" / "browser_use_rewards.py"))
    llm = ScriptedChat()
    original = Agent.__init__

    def remember(agent: Agent, *args: Any, **kwargs: Any) -> None:  # the script reads the page
        original(agent, *args, **kwargs)
        llm.agent = agent

    monkeypatch.setattr(Agent, "__init__", remember)
    history = await example["main"](llm, shop.url)
    await history_agent_kill(llm.agent)
    assert len(history.history) >= 2  # the navigation, then the agent's steps
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) >= 1 and lines[0].split()[1].startswith("fill(")


async def history_agent_kill(agent: Agent) -> None:
    await agent.browser_session.kill()


async def test_the_overlay_follows_the_session_with_the_extension_loaded(
    shop: ShopServer, daemon: Daemon
) -> None:
    """browser-use's Chromium with the built extension (launch flags in BrowserProfile.args),
    paired with the daemon: after attach(overlay=True) the page's overlay shows the steps."""
    from playwright.async_api import async_playwright

    dist = str(ROOT / "extension" / "dist")
    assert (ROOT / "extension" / "dist" / "manifest.json").exists(), "build the extension"
    llm = ScriptedChat()
    agent = make_agent(
        shop, llm, args=[f"--disable-extensions-except={dist}", f"--load-extension={dist}"]
    )
    client = AsyncClient(daemon.url, daemon.token)
    async with async_playwright() as pw:
        try:
            await agent.browser_session.start()
            browser = await pw.chromium.connect_over_cdp(agent.browser_session.cdp_url)
            context = browser.contexts[0]
            worker = context.service_workers[0] if context.service_workers else None
            worker = worker or await context.wait_for_event("serviceworker")
            await worker.evaluate(  # the options page: pairing, and the page hook on
                "(s) => chrome.storage.local.set(s)",
                {"url": daemon.url, "token": daemon.token, "flags": "default", "pageHook": True},
            )
            await until(
                lambda: worker.evaluate("() => self.webshepherd.state().conn == 'connected'"),
                what="the extension to connect",
                interval=0.1,
            )
            shown: list[int] = []

            async def overlay_after_first_step(_: Any) -> None:
                """The first step (typing) leaves the page in place: its overlay is read here."""
                if shown:
                    return
                page = next(p for p in context.pages if p.url.startswith(shop.url.rstrip("/")))
                # not get_by_test_id: BrowserGym sets playwright's test id attribute to "bid"
                # for the whole process
                heading = page.locator('[data-testid="ws-panel"]').get_by_text(
                    re.compile(r"^Candidates · step \d+$")
                )
                await heading.first.wait_for(timeout=30_000)
                shown.append(int((await heading.first.inner_text()).rsplit(" ", 1)[1]))

            handle = await attach(
                agent,
                client=client,
                mode="observe",
                checklist=CHECKLIST,
                overlay=True,
                on_step_end=overlay_after_first_step,
            )
            await agent.run(max_steps=3, on_step_end=handle.on_step_end)
            assert handle.overlay_reply is not None, "the extension did not answer attach"
            assert handle.overlay_reply["type"] == "attached", handle.overlay_reply
            assert handle.overlay_reply["session_id"] == handle.session_id
            async with AsyncClient(daemon.url, daemon.token) as reader:
                events = (await reader.session(handle.session_id)).events
            scored = [e["step"] for e in events if e.get("type") == "scored"]
            # the first step's candidates, on the page, named as a person reads the step
            assert shown and shown[0] == step_number(scored[0])
        finally:
            await agent.browser_session.kill()
            await client.close()


@pytest.mark.timeout(300)
async def test_the_example_runs_as_written_offline(tmp_path) -> None:
    """``python examples/browser_use_rewards.py`` against the serve its docstring names (the
    tiny judge, the shop's loopback origin a sandbox): the bundled shop and the scripted chat
    model order the cheapest cable, no step is replaced (the rewards agree with the shop: each
    step's is above the wrong ones' ~0), and the session is ended in the recording."""
    sandbox = {"config": {"sandbox_origins": ["http://127.0.0.1:*"]}}
    with daemon_process(tmp_path / "sandbox", sandbox) as served:
        env = {
            **os.environ,
            "WEBSHEPHERD_URL": served.url,
            "WEBSHEPHERD_TOKEN": served.token,
            "CHROMIUM": CHROMIUM,
        }
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(ROOT / "examples" / "browser_use_rewards.py"),
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 240)
        assert proc.returncode == 0, err.decode()[-3000:]
        async with AsyncClient(served.url, served.token) as client:
            sessions = await client.sessions()
    assert len(sessions) == 1 and sessions[0].ended_at is not None, sessions
    lines = out.decode().splitlines()
    steps = [line for line in lines if re.match(r"\d+ ", line)]
    assert [int(line.split()[0]) for line in steps] == list(range(1, 9)), lines
    assert re.fullmatch(r"1 fill\('\w+', 'usb-c cable'\) 0\.\d\d ", steps[0]), lines
    assert steps[-1] == "8 send_msg_to_user('Order VW-1001 is placed.') 1.00 ", lines
    rewards = [float(line.split()[-1]) for line in steps]
    assert not any(line.endswith("replaced") for line in steps), lines  # all above 0.1
    assert all(r >= 0.1 for r in rewards) and rewards[0] < rewards[3] < rewards[-1], lines
    assert lines[-1] == f"orders: [[{variant(0).target()['name']!r}]]", lines
    assert "Missing credentials" not in err.decode()
    # browser-use's own INFO lines ("INFO     [Agent] ...") would swamp the example's
    assert not re.search(r"^INFO +\[", err.decode(), flags=re.M), err.decode()[-3000:]


class NeverDone(ScriptedChat):
    """Scrolls forever (never ``done``); ``cancel_at``: the call that cancels the run's task
    (as Ctrl-C in an asyncio program or a caller's timeout does)."""

    def __init__(self, cancel_at: int | None = None) -> None:
        super().__init__()
        self.cancel_at = cancel_at
        self.target: asyncio.Task[Any] | None = None  # the task to cancel (else this call's)

    async def ainvoke(self, messages: Any, output_format: Any = None, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls == self.cancel_at:
            task = self.target or asyncio.current_task()
            assert task is not None
            task.cancel()
            await asyncio.sleep(1)  # the cancellation lands here
        answer = {
            "thinking": f"step {self.calls}",
            "evaluation_previous_goal": "ok",
            "memory": "",
            "next_goal": "scroll",
            "action": [{"scroll": {"down": True, "pages": 0.5}}],
        }
        return ChatInvokeCompletion(completion=output_format.model_validate(answer), usage=None)


async def session_end(daemon: Daemon, session_id: str) -> dict[str, Any]:
    async with AsyncClient(daemon.url, daemon.token) as client:
        events = (await client.session(session_id)).events
    return next(e for e in events if e.get("type") == "session.ended")


async def test_the_session_ends_when_the_run_reaches_max_steps(
    shop: ShopServer, daemon: Daemon
) -> None:
    llm = NeverDone()
    agent = make_agent(shop, llm)
    client = AsyncClient(daemon.url, daemon.token)
    handle = await attach(agent, client=client, mode="observe", checklist=CHECKLIST)
    try:
        history = await agent.run(max_steps=2, on_step_end=handle.on_step_end)
    finally:
        await agent.browser_session.kill()
        await client.close()
    assert not history.is_done() and handle.session_id is not None and handle.session is None
    end = await session_end(daemon, handle.session_id)
    assert end["outcome"] == "unknown"
    assert end["answer"] == ("the run ended without done: Failed to complete task in maximum steps")


async def test_the_session_ends_when_the_run_is_cancelled(shop: ShopServer, daemon: Daemon) -> None:
    llm = NeverDone(cancel_at=2)
    agent = make_agent(shop, llm)
    client = AsyncClient(daemon.url, daemon.token)
    handle = await attach(agent, client=client, mode="observe", checklist=CHECKLIST)
    try:
        with pytest.raises(asyncio.CancelledError):
            await asyncio.create_task(agent.run(max_steps=5, on_step_end=handle.on_step_end))
    finally:
        await agent.browser_session.kill()
        await client.close()
    assert handle.session_id is not None and handle.session is None
    end = await session_end(daemon, handle.session_id)
    assert end["outcome"] == "unknown" and end["answer"].startswith(
        "the run ended with CancelledError"
    )


async def test_a_cancellation_the_run_swallowed_still_cancels_and_ends_the_session(
    shop: ShopServer, daemon: Daemon
) -> None:
    llm = NeverDone(cancel_at=2)
    agent = make_agent(shop, llm)
    browser_use_run = agent.run

    async def swallowing_run(*args: Any, **kwargs: Any) -> Any:
        """A run that swallows its task's cancellation (as a library's wait_for can)."""
        try:
            return await browser_use_run(*args, **kwargs)
        except asyncio.CancelledError:
            return None

    agent.run = swallowing_run  # type: ignore[method-assign]
    client = AsyncClient(daemon.url, daemon.token)
    handle = await attach(agent, client=client, mode="observe", checklist=CHECKLIST)
    try:
        run = asyncio.create_task(agent.run(max_steps=5, on_step_end=handle.on_step_end))
        llm.target = run
        with pytest.raises(asyncio.CancelledError):
            await run
    finally:
        await agent.browser_session.kill()
        await client.close()
    assert handle.session_id is not None and handle.session is None
    end = await session_end(daemon, handle.session_id)
    assert end["answer"].startswith("the run ended with CancelledError")


async def test_a_refused_action_says_who_refused_it(shop: ShopServer, tmp_path: Any) -> None:
    """gate: a low reward (a scripted judge's 0.1) waits for the paired monitor, which
    rejects: the action is held back with who refused it (the person, by name) and why."""
    import threading

    from tests.integrations.conftest import daemon_process
    from tests.integrations.test_browsergym import decide_every_request

    spec = {"judge": {"default": [0.1, [0], "not yet"]}}
    with daemon_process(tmp_path / "scripted", spec) as scripted:
        done = threading.Event()
        monitor = await asyncio.to_thread(decide_every_request, scripted, "reject", done)
        llm = ScriptedChat()
        agent = make_agent(shop, llm)
        client = AsyncClient(scripted.url, scripted.token)
        handle = await attach(agent, client=client, mode="gate", checklist=CHECKLIST)
        try:
            history = await agent.run(max_steps=2, on_step_end=handle.on_step_end)
        finally:
            done.set()
            await agent.browser_session.kill()
            await client.close()
            await asyncio.to_thread(monitor.join, 10)
    first = handle.rewards[0]
    assert first.replaced and first.decision == "rejected" and first.reward == 0.1
    assert first.refusal is not None
    assert first.refusal.startswith("refused by person monitor:test-monitor (")
    assert first.refusal.split(": ", 1)[1].startswith("not this link")
    shown = history.history[1].result[0].extracted_content
    assert shown.startswith(f"webshepherd held back {first.action} ({first.refusal})")


def as_at_a_terminal() -> None:
    """In the example's process before it starts: Ctrl-C at its default, as a terminal starts
    a program (a launcher that ran this suite in the background, as a script's ``&`` does,
    hands its children SIGINT ignored, and the example would not hear it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.timeout(300)
async def test_the_example_stopped_by_ctrl_c_ends_its_session(tmp_path) -> None:
    """Ctrl-C (SIGINT) once the example's first step is scored: it exits (130, browser-use's
    pause-on-Ctrl-C off), and its session is ended in the recording (``ended_at`` set, the
    outcome unknown), not left "running" for the TUI."""
    sandbox = {"config": {"sandbox_origins": ["http://127.0.0.1:*"]}}
    with daemon_process(tmp_path / "sandbox", sandbox) as served:
        env = {**os.environ, "WEBSHEPHERD_URL": served.url, "WEBSHEPHERD_TOKEN": served.token}
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(ROOT / "examples" / "browser_use_rewards.py"),
            env={**env, "CHROMIUM": CHROMIUM},
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            preexec_fn=as_at_a_terminal,
        )
        async with AsyncClient(served.url, served.token) as client:

            async def scored() -> list[dict[str, Any]]:
                sessions = await client.sessions()
                if not sessions:
                    return []
                events = (await client.session(sessions[0].session_id)).events
                return [e for e in events if e.get("type") == "scored"]

            await until(scored, 120, "the example's first scored step", interval=0.2)
            proc.send_signal(signal.SIGINT)
            assert await asyncio.wait_for(proc.wait(), 60) == 130  # "stopped (Ctrl-C)"
            (session,) = await client.sessions()
    assert session.ended_at is not None and session.outcome == "unknown", session
