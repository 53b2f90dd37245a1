"""Reward-guided selection around an AgentLab agent: ``main(subagent_args, start_url, exp_root)``.

Needs a running daemon (``webshepherd serve``), ``pip install 'webshepherd[integrations]'`` and
``pip install --no-deps agentlab``; ``WEBSHEPHERD_URL`` / ``WEBSHEPHERD_TOKEN`` override the local
daemon and its stored token. ``subagent_args`` is any AgentLab ``AgentArgs`` (e.g.
``MultiCandidateGenericAgentArgs``); the tests pass a scripted one. docs/frameworks.md shows
the lines between the markers.
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
        url=os.environ.get("WEBSHEPHERD_URL"),
    )
    task = {"start_url": start_url, "goal": "Search the shop for a USB-C cable"}
    exp = ExpArgs(agent_args, EnvArgs("openended", max_steps=2, task_kwargs=task))
    exp.prepare(exp_root)
    exp.run()  # each step: agent_info.stats["ws_reward"], .extra_info["webshepherd"], XRay page
    return exp


# --- README ---
