"""Reward-guided selection around an AgentLab agent: ``main(subagent_args, start_url, exp_root)``.

Needs a running daemon (``webshepherd serve``), ``pip install '.[integrations]'`` in a clone and
``pip install --no-deps agentlab``; ``WEBSHEPHERD_URL`` / ``WEBSHEPHERD_TOKEN`` override the local
daemon and its stored token. ``subagent_args`` is any AgentLab ``AgentArgs`` (e.g.
``MultiCandidateGenericAgentArgs``). The task is the bundled shop's own (the cheapest USB-C
cable, as Ada Lovelace) with its reference checklist. docs/frameworks.md shows the lines
between the markers.

As a script (no LLM needed) it runs AgentLab's experiment loop on the bundled shop (started
here; or ``START_URL``) with a scripted subagent, the demo's shopper (on each page the action
that makes progress and two distractors), and prints each step's candidates, their rewards and
the pick: ``python examples/agentlab_rewards.py [START_URL] [--exp-root DIR]``. Offline: serve
the tiny judge, which knows the shop, and let the shop's order (a POST on loopback) run flagged:
``webshepherd serve --model "$(webshepherd dev tiny-model --quiet)" --sandbox-origin
'http://127.0.0.1:*'``. Then, roughly::

    step 0: fill('16', 'usb-c cable') 0.13, click('13') 0.00, fill('16', 'hdmi cable') 0.00
      picked fill('16', 'usb-c cable') (reward 0.13)
    ... (search, open the cheapest cable, add it to the cart, check out as Ada Lovelace)
    step 7: send_msg_to_user('Order VW-1001 is placed.') 1.00
      picked send_msg_to_user('Order VW-1001 is placed.') (reward 1.00)
    orders: [['Basic USB-C cable, 1 m']]
    results: removed (--exp-root DIR keeps them)

AgentLab's openended task never ends by itself: the run stops at ``max_steps`` and the session
ends with the outcome unknown. AgentLab launches playwright's own Chromium; when playwright has
none, ``CHROMIUM`` (default /usr/bin/chromium) is linked where it looks. Every file the run
makes (that link, AgentLab's results without ``--exp-root``) is in one temporary folder,
removed at the end.

With a person paired (a paired ``webshepherd tui`` or extension connected, the default mode
``ask``), no reward waits (no ``approval_threshold``: the picks score with
``approval="never"``), and only the order's POST form, held by the daemon's rules, waits for
that person: served as above (the shop's loopback a sandbox origin), nothing waits; without
``--sandbox-origin``, the order waits until they decide or ``--approval-timeout`` (120 s)
passes (nobody paired: it is refused at once).
"""

# --- README ---
from agentlab.agents.agent_args import AgentArgs
from agentlab.experiments.loop import EnvArgs, ExpArgs
from webshepherd.daemon.demo.agent import CHECKLIST, TASK
from webshepherd.integrations.agentlab import RewardGuidedAgentArgs


def main(subagent_args: AgentArgs, start_url: str, exp_root: str) -> ExpArgs:
    agent_args = RewardGuidedAgentArgs(
        subagent_args=subagent_args,  # any AgentLab agent: it proposes, webshepherd picks
        n_candidates=3,
        select="refine",  # a pick below refine_below: the judge's feedback is the next hint
        checklist=CHECKLIST,  # the shop's reference checklist; else the model writes one
    )  # the daemon: $WEBSHEPHERD_URL, else the local one
    task = {"start_url": start_url, "goal": TASK}  # buy the cheapest USB-C cable
    exp = ExpArgs(agent_args, EnvArgs("openended", max_steps=8, task_kwargs=task))
    exp.prepare(exp_root)
    exp.run()  # each step: agent_info.stats["ws_reward"], .extra_info["webshepherd"], XRay page
    return exp


# --- README ---

import argparse  # noqa: E402 (below: running it as a script)
import os  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from agentlab.experiments.loop import get_exp_result  # noqa: E402
from browsergym.experiments.agent import Agent, AgentInfo  # noqa: E402
from webshepherd.daemon.demo.agent import ShopAgent  # noqa: E402
from webshepherd.integrations.browsergym import observation_text  # noqa: E402
from webshepherd.protocol.client.script import one_line_errors  # noqa: E402


@dataclass
class Page:
    """What the scripted agent reads: the page's URL and AX-tree text. Not ``str`` values of the
    obs, so AgentLab's token statistics skip them (they would download tiktoken's encoding)."""

    url: str
    text: str


class ScriptedAgent(Agent):
    """A stand-in for an LLM agent (offline), through AgentLab's multi-candidate interface: the
    demo's shopper proposes the action that makes progress and two distractors, with its
    thoughts; once the order is placed, only the answer to the user. The judge's hint, when
    there is one, is not read."""

    def __init__(self) -> None:
        self.shopper = ShopAgent(seed=0)
        self.actions: list[str] = []

    def obs_preprocessor(self, obs: dict[str, Any]) -> Any:
        return {"page": Page(obs["url"], observation_text(obs))}

    def get_candidate_generations(
        self, obs: dict[str, Any], hint: list[str] | None = None, n_candidates: int = 3
    ) -> list[dict[str, Any]]:
        page = obs["page"]
        proposals = self.shopper.propose(page.url, page.text)
        if ShopAgent.done(page.url):  # the order is placed: say so
            proposals = [p for p in proposals if p.action.startswith("send_msg_to_user(")]
        return [
            {"action": p.action, "agent_info": AgentInfo(think=p.thought)}
            for p in proposals[:n_candidates]
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


def playwright_chromium(folder: Path) -> None:
    """Lets playwright 1.44 (BrowserGym's pin) find a Chromium: its own, else ``CHROMIUM``,
    linked in ``folder``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        if Path(pw.chromium.executable_path).exists():
            return
        build = Path(pw.chromium.executable_path).parents[1].name  # e.g. chromium-1117
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if not Path(chromium).exists():
        sys.exit(f"no Chromium: run `playwright install chromium` or set CHROMIUM ({chromium})")
    chrome = folder / "ms-playwright" / build / "chrome-linux" / "chrome"
    chrome.parent.mkdir(parents=True)
    chrome.symlink_to(os.path.realpath(chromium))
    os.environ["PLAYWRIGHT_BROWSERS_PATH"] = str(folder / "ms-playwright")


def rounded(reward: float | None) -> str:
    return "none" if reward is None else f"{reward:.2f}"


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
    parser.add_argument("start_url", nargs="?", help="default: the bundled shop, started here")
    parser.add_argument("--exp-root", help="AgentLab's results folder (default: removed at exit)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="agentlab-rewards-") as scratch:
        playwright_chromium(Path(scratch))
        root = args.exp_root or str(Path(scratch) / "results")
        orders = None
        if args.start_url:
            exp = main(ScriptedAgentArgs(), args.start_url, root)
        else:
            from webshepherd.daemon.demo.shop import ShopServer

            with ShopServer() as shop:
                exp = main(ScriptedAgentArgs(), shop.url, root)
                orders = [o["items"] for o in shop.state.orders]
        exp.agent_args.close()
        if exp.err_msg:
            sys.exit(f"the experiment failed: {exp.err_msg}")
        for step in get_exp_result(exp.exp_dir).steps_info:
            info = step.agent_info.get("extra_info", {}) if step.agent_info else {}
            ws = info.get("webshepherd")
            if ws is None:
                continue
            pairs = zip(ws["candidates"], ws["rewards"], strict=True)
            scored = ", ".join(f"{a} {rounded(r)}" for a, r in pairs)
            picked = f"{ws['action']} (reward {rounded(ws['reward'])})"
            print(f"step {step.step}: {scored}\n  picked {picked}")
        if orders is not None:
            print("orders:", orders)
        print("results:", exp.exp_dir if args.exp_root else "removed (--exp-root DIR keeps them)")


if __name__ == "__main__":
    one_line_errors()  # no daemon, a wrong token: the error's one line, no traceback (-v: with it)
    run(sys.argv[1:])
