"""Step overhead of the framework integrations: each framework's step with and without webshepherd.

    .venv-integrations/bin/python bench/integrations_overhead.py [--steps 10] [--json OUT]

Runs in the integrations venv (browsergym-core, browser-use, AgentLab); the daemon (tiny model,
the integration tests' fast config) runs in the main venv (``--daemon-python``), the bundled
shop on loopback, Debian's Chromium headless. Scripted agents scroll the shop's home page down
and up, so every step does the same work:

- BrowserGym: ``env.step`` of a plain env and of a ``ProcessRewardWrapper`` env, the two
  alternating step by step (the wrapped step scores one candidate, runs, then sends the new page).
- AgentLab: one cycle of AgentLab's own loop (``ExpArgs.run``: agent, env step, preprocessing),
  a scripted agent alone and inside ``RewardGuidedAgentArgs`` (n_candidates 1, and 3 distinct
  candidates in one request), runs alternating in rounds. tiktoken's token counts of the loop
  are replaced by word counts on both sides (tiktoken downloads its encoding; no network here).
- browser-use: one ``Agent`` step (its own step timestamps) with a scripted chat model pressing
  PageDown / PageUp, alone and with ``attach(mode="observe")``, runs alternating in rounds.

Prints the median of ``--steps`` steps per configuration, the median overhead, and the load
average; ``--json OUT`` writes them.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # its siblings, as the other bench scripts import them
os.environ["ANONYMIZED_TELEMETRY"] = "false"  # browser-use: no network

from agentlab.agents.agent_args import AgentArgs  # noqa: E402
from browsergym.experiments.agent import Agent, AgentInfo  # noqa: E402
from miniwob_holds import start_daemon, stop_daemon  # noqa: E402
from webshepherd.daemon.demo.shop import ShopServer  # noqa: E402
from webshepherd.integrations.browsergym import use_chromium  # noqa: E402

from tests.integrations.conftest import CHECKLIST, CHROMIUM  # noqa: E402
from tests.integrations.conftest import TEST_TOKEN as TOKEN  # noqa: E402

SCROLLS = ["scroll(0, 200)", "scroll(0, -200)"]


def browsergym(shop: ShopServer, url: str, steps: int) -> dict[str, list[float]]:
    from browsergym.core.env import BrowserEnv
    from browsergym.core.task import OpenEndedTask
    from webshepherd.integrations.browsergym import ProcessRewardWrapper

    def make() -> Any:
        return BrowserEnv(
            task_entrypoint=OpenEndedTask,
            task_kwargs={"start_url": shop.url, "goal": "Search the shop for a USB-C cable"},
            headless=True,
            pw_chromium_kwargs={"executable_path": CHROMIUM},
        )

    plain, wrapped = make(), ProcessRewardWrapper(make(), url=url, checklist=CHECKLIST)
    out: dict[str, list[float]] = {"plain": [], "webshepherd": []}
    try:
        plain.reset()
        wrapped.reset()
        for i in range(steps + 1):  # the first step of each is a warm-up
            for name, env in (("plain", plain), ("webshepherd", wrapped)):
                t0 = time.perf_counter()
                env.step(SCROLLS[i % 2])
                if i:
                    out[name].append(time.perf_counter() - t0)
    finally:
        plain.close()
        wrapped.close()
    return out


class Scroller(Agent):
    """Scrolls down and up; three distinct candidates when asked for several."""

    def __init__(self) -> None:
        self.n = 0

    def get_candidate_generations(
        self, obs: Any, hint: Any = None, n_candidates: int = 3
    ) -> list[dict[str, Any]]:
        moves = [SCROLLS[self.n % 2], "noop(0)", "scroll(0, 0)"][:n_candidates]
        return [{"action": a, "agent_info": AgentInfo(think="scroll")} for a in moves]

    def update_agent_state_from_selected_candidate(self, output: dict[str, Any]) -> None:
        self.n += 1

    def get_action(self, obs: Any) -> tuple[str, Any]:
        self.n += 1
        return SCROLLS[(self.n - 1) % 2], AgentInfo(think="scroll")


@dataclass
class ScrollerArgs(AgentArgs):
    agent_name: str = "Scroller"

    def make_agent(self) -> Agent:
        return Scroller()


def agentlab(shop: ShopServer, url: str, steps: int, tmp: Path) -> dict[str, list[float]]:
    import agentlab.experiments.loop as loop
    from webshepherd.integrations.agentlab import RewardGuidedAgentArgs

    loop.count_tokens = lambda text: len(text.split())  # tiktoken would download its encoding

    configs: dict[str, Callable[[], Any]] = {
        "plain": ScrollerArgs,
        "webshepherd n=1": lambda: RewardGuidedAgentArgs(
            subagent_args=ScrollerArgs(), n_candidates=1, checklist=CHECKLIST, url=url
        ),
        "webshepherd n=3": lambda: RewardGuidedAgentArgs(
            subagent_args=ScrollerArgs(), n_candidates=3, checklist=CHECKLIST, url=url
        ),
    }
    out: dict[str, list[float]] = {name: [] for name in configs}
    rounds = 2
    per_run = -(-steps // rounds)
    task = {"start_url": shop.url, "goal": "Search the shop for a USB-C cable"}
    for _ in range(rounds):
        for name, make in configs.items():
            exp = loop.ExpArgs(
                agent_args=make(),
                env_args=loop.EnvArgs(
                    "openended", task_seed=0, max_steps=per_run + 2, task_kwargs=task
                ),
                save_screenshot=False,
                logging_level=40,
                logging_level_stdout=40,
            )
            exp.prepare(tmp / "agentlab")
            exp.run()
            if exp.err_msg:
                raise SystemExit(f"AgentLab run failed: {exp.err_msg}\n{exp.stack_trace}")
            exp.agent_args.close()
            infos = loop.get_exp_result(exp.exp_dir).steps_info
            starts = [s.profiling.agent_start for s in infos if s.action is not None]
            cycles = [b - a for a, b in itertools.pairwise(starts)]
            out[name] += cycles[1:][:per_run]  # the first cycle is a warm-up
    return {k: v[:steps] for k, v in out.items()}


def browser_use(shop: ShopServer, url: str, steps: int) -> dict[str, list[float]]:
    from browser_use import Agent, BrowserProfile, BrowserSession
    from browser_use.llm.views import ChatInvokeCompletion
    from webshepherd.integrations.browser_use import attach
    from webshepherd.protocol.client import AsyncClient

    class Scrolling:
        model = "scripted"
        _verified_api_keys = True
        provider = name = model_name = "scripted"

        def __init__(self) -> None:
            self.calls = 0

        async def ainvoke(self, messages: Any, output_format: Any = None, **kw: Any) -> Any:
            self.calls += 1
            action = {"send_keys": {"keys": "PageDown" if self.calls % 2 else "PageUp"}}
            answer = {
                "thinking": "scroll",
                "evaluation_previous_goal": "ok",
                "memory": "",
                "next_goal": "page down or up",
                "action": [action],
            }
            try:
                parsed = output_format.model_validate(answer)
            except ValueError:  # the last step: browser-use offers only `done`
                answer["action"] = [{"done": {"text": "scrolled", "success": True}}]
                parsed = output_format.model_validate(answer)
            return ChatInvokeCompletion(completion=parsed, usage=None)

    async def run(with_ws: bool, n: int) -> list[float]:
        profile = BrowserProfile(
            executable_path=CHROMIUM, headless=True, enable_default_extensions=False
        )
        agent = Agent(
            task="Search the shop for a USB-C cable",
            llm=Scrolling(),
            browser_session=BrowserSession(browser_profile=profile),
            initial_actions=[{"navigate": {"url": shop.url}}],
            use_judge=False,
            use_vision=False,
            enable_planning=False,
            message_compaction=False,
            directly_open_url=False,
            enable_signal_handler=False,
        )
        client = AsyncClient(url, TOKEN)
        kwargs: dict[str, Any] = {}
        if with_ws:
            handle = await attach(agent, client=client, mode="observe", checklist=CHECKLIST)
            kwargs["on_step_end"] = handle.on_step_end
        history = await agent.run(max_steps=n + 2, **kwargs)
        await client.close()
        durations = [h.metadata.duration_seconds for h in history.history if h.metadata]
        return durations[1 : n + 1]  # the first step is a warm-up, the last one says done

    out: dict[str, list[float]] = {"plain": [], "webshepherd": []}
    rounds = 2
    per_run = -(-steps // rounds)
    # its own thread: playwright's sync API (BrowserGym) keeps an event loop in this one
    with ThreadPoolExecutor(1) as pool:
        for _ in range(rounds):
            out["plain"] += pool.submit(asyncio.run, run(False, per_run)).result()
            out["webshepherd"] += pool.submit(asyncio.run, run(True, per_run)).result()
    return {k: v[:steps] for k, v in out.items()}


def summary(samples: dict[str, list[float]]) -> dict[str, Any]:
    med = {k: statistics.median(v) for k, v in samples.items() if v}
    base = med.get("plain", 0.0)
    return {
        "median_s": med,
        "overhead_s": {k: v - base for k, v in med.items() if k != "plain"},
        "samples_s": samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--daemon-python", default=str(ROOT / ".venv" / "bin" / "python"))
    parser.add_argument(
        "--only", nargs="*", default=["browsergym", "agentlab", "browser-use"], help="frameworks"
    )
    args = parser.parse_args()
    load_before = os.getloadavg()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        use_chromium(CHROMIUM)  # BrowserGym's chat window launches playwright's own Chromium
        os.environ["WEBSHEPHERD_TOKEN"] = TOKEN
        daemon, url = start_daemon(args.daemon_python, tmp / "daemon")
        try:
            with ShopServer() as shop:
                if "browsergym" in args.only:
                    results["browsergym"] = summary(browsergym(shop, url, args.steps))
                if "agentlab" in args.only:
                    results["agentlab"] = summary(agentlab(shop, url, args.steps, tmp))
                if "browser-use" in args.only:
                    results["browser-use"] = summary(browser_use(shop, url, args.steps))
        finally:
            stop_daemon(daemon)
    report = {
        "steps": args.steps,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "model": "tiny (tests' fast config: max_new_tokens 96), CPU",
        "frameworks": results,
    }
    for name, res in results.items():
        for config, med in res["median_s"].items():
            extra = res["overhead_s"].get(config)
            more = f"  (+{extra * 1000:.0f} ms)" if extra is not None else ""
            print(f"{name:12s} {config:16s} median {med * 1000:8.0f} ms{more}")
    print(f"load average before {load_before}, after {report['loadavg_after']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
