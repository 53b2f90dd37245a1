"""Reward-guided selection around an AgentLab agent: ``main(subagent_args, start_url, exp_root)``.

Needs a running daemon (``webshepherd serve``), ``pip install '.[integrations]'`` in a clone and
``pip install --no-deps agentlab``; ``WEBSHEPHERD_URL`` / ``WEBSHEPHERD_TOKEN`` override the local
daemon and its stored token. ``subagent_args`` is any AgentLab ``AgentArgs`` (e.g.
``MultiCandidateGenericAgentArgs``). docs/frameworks.md shows the lines between the markers.

As a script (no LLM needed) it runs AgentLab's experiment loop on the bundled shop (or
``START_URL``) with a scripted subagent and prints each step's candidates, their rewards and the
pick: ``python examples/agentlab_rewards.py [START_URL] [--exp-root DIR]``. AgentLab launches
playwright's own Chromium; when playwright has none, ``CHROMIUM`` (default /usr/bin/chromium) is
linked where it looks, in a temporary folder.
"""

# --- README ---
import os

from agentlab.agents.agent_args import AgentArgs
from agentlab.experiments.loop import EnvArgs, ExpArgs
from webshepherd.integrations.agentlab import RewardGuidedAgentArgs


def main(subagent_args: AgentArgs, start_url: str, exp_root: str) -> ExpArgs:
    agent_args = RewardGuidedAgentArgs(
        subagent_args=subagent_args,  # any AgentLab agent: it proposes, webshepherd picks
        n_candidates=3,
        select="refine",  # a pick below refine_below: the judge's feedback is the next hint
        checklist="Checklist 1: Search the shop for a USB-C cable",  # else the model writes one
    )  # the daemon: $WEBSHEPHERD_URL, else the local one
    task = {"start_url": start_url, "goal": "Search the shop for a USB-C cable"}
    exp = ExpArgs(agent_args, EnvArgs("openended", max_steps=2, task_kwargs=task))
    exp.prepare(exp_root)
    exp.run()  # each step: agent_info.stats["ws_reward"], .extra_info["webshepherd"], XRay page
    return exp


# --- README ---

import argparse  # noqa: E402 (below: running it as a script)
import re  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from agentlab.experiments.loop import get_exp_result  # noqa: E402
from browsergym.experiments.agent import Agent, AgentInfo  # noqa: E402
from webshepherd.integrations.browsergym import observation_text  # noqa: E402


@dataclass
class Page:
    """What the scripted agent reads: the page's AX-tree text. Not a ``str`` value of the obs,
    so AgentLab's token statistics skip it (they would download tiktoken's encoding)."""

    text: str


class ScriptedAgent(Agent):
    """A stand-in for an LLM agent (offline), through AgentLab's multi-candidate interface:
    first type the query into the search box (proposed twice) or open the deals, then press
    Search or scroll. The judge's hint, when there is one, is not read."""

    def __init__(self) -> None:
        self.actions: list[str] = []

    def obs_preprocessor(self, obs: dict[str, Any]) -> Any:
        return {"page": Page(observation_text(obs))}

    def get_candidate_generations(
        self, obs: dict[str, Any], hint: list[str] | None = None, n_candidates: int = 3
    ) -> list[dict[str, Any]]:
        text = obs["page"].text
        box, search, deals = (
            re.search(rf"\[(\w+)\] {what}", text)
            for what in ("searchbox", "button 'Search", "link 'Deals")
        )
        if not self.actions and box:
            proposals = [f"fill('{box.group(1)}', 'usb-c cable')"] * 2  # proposed twice: it counts
            proposals += [f"click('{deals.group(1)}')"] if deals else []
        else:
            proposals = [f"click('{search.group(1)}')"] if search else []
            proposals += ["scroll(0, 200)"]
        return [
            {"action": a, "agent_info": AgentInfo(think="Towards the cables.")}
            for a in proposals[:n_candidates]
        ]

    def update_agent_state_from_selected_candidate(self, output: dict[str, Any]) -> None:
        self.actions.append(output["action"])

    def get_action(self, obs: Any) -> tuple[str, AgentInfo]:
        first = self.get_candidate_generations(obs)[0]
        self.update_agent_state_from_selected_candidate(first)
        return first["action"], first["agent_info"]


@dataclass
class ScriptedAgentArgs(AgentArgs):
    agent_name: str = "ScriptedAgent"

    def make_agent(self) -> Agent:
        return ScriptedAgent()


def playwright_chromium() -> None:
    """Lets playwright 1.44 (BrowserGym's pin) find a Chromium: its own, else ``CHROMIUM``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        if Path(pw.chromium.executable_path).exists():
            return
        build = Path(pw.chromium.executable_path).parents[1].name  # e.g. chromium-1117
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if not Path(chromium).exists():
        sys.exit(f"no Chromium: run `playwright install chromium` or set CHROMIUM ({chromium})")
    browsers = Path(tempfile.mkdtemp(prefix="ms-playwright-"))
    chrome = browsers / build / "chrome-linux" / "chrome"
    chrome.parent.mkdir(parents=True)
    chrome.symlink_to(os.path.realpath(chromium))
    os.environ["PLAYWRIGHT_BROWSERS_PATH"] = str(browsers)


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("start_url", nargs="?", help="default: the bundled shop, started here")
    parser.add_argument("--exp-root", help="AgentLab's results folder (default: a temporary one)")
    args = parser.parse_args(argv)
    playwright_chromium()
    root = args.exp_root or tempfile.mkdtemp(prefix="agentlab-")
    if args.start_url:
        exp = main(ScriptedAgentArgs(), args.start_url, root)
    else:
        from webshepherd.daemon.demo.shop import ShopServer

        with ShopServer() as shop:
            exp = main(ScriptedAgentArgs(), shop.url, root)
    exp.agent_args.close()
    if exp.err_msg:
        sys.exit(f"the experiment failed: {exp.err_msg}")
    for step in get_exp_result(exp.exp_dir).steps_info:
        ws = step.agent_info.get("extra_info", {}).get("webshepherd") if step.agent_info else None
        if ws is None:
            continue
        scored = ", ".join(f"{a} {r}" for a, r in zip(ws["candidates"], ws["rewards"], strict=True))
        print(f"step {step.step}: {scored}\n  picked {ws['action']} (reward {ws['reward']})")
    print("results:", exp.exp_dir)


if __name__ == "__main__":
    run(sys.argv[1:])
