"""Reward-guided best-of-n on the bundled shop: `python examples/reward_guided.py`.

Needs a running daemon (`webshepherd serve`, at $WEBSHEPHERD_URL or ws://127.0.0.1:8765/v1).
The shop runs in this process and its pages are read by the demo's text browser (no Chromium).
Offline by default: a scripted policy proposes three actions per step; `--chat BASE_URL MODEL`
uses a chat model instead (any OpenAI-compatible API; the key from $OPENAI_API_KEY). Prints
each step's candidates with their rewards and the action that ran.
"""

# --- README ---
import argparse
import asyncio
import os
import re

from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.text_env import TextEnvironment
from webshepherd.protocol.agents import (
    ChatPolicy,
    EpisodeOptions,
    PageState,
    PolicyContext,
    run_episode,
)
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.common import Candidate


def scripted(state: PageState, context: PolicyContext) -> list[Candidate]:
    """A stand-in for a language model: three candidate actions read off the page."""
    bids = {name: bid for bid, name in re.findall(r"\[(\w+)\] \w+ '([^']*)'", state.axtree)}
    step = len(context.history)
    if step == 0 and "Search products" in bids:
        good = f"fill('{bids['Search products']}', 'usb-c cable')"
    elif step == 1 and "Search" in bids:
        good = f"click('{bids['Search']}')"
    else:
        good = "send_msg_to_user('Here are the USB-C cables.')"  # ends the episode
    others = [f"click('{bids[n]}')" for n in ("About us", "Deals") if n in bids]
    return [Candidate(thought="Step towards the cables.", action=good)] + [
        Candidate(thought="Maybe this helps.", action=a) for a in others
    ]


async def main(chat: list[str] | None) -> None:
    policy = ChatPolicy(chat[0], chat[1], os.environ.get("OPENAI_API_KEY")) if chat else scripted
    with ShopServer() as shop:
        async with AsyncClient() as client:  # the daemon at $WEBSHEPHERD_URL or the default
            # best-of-n: the policy's distinct actions scored in one request, the best one runs
            options = EpisodeOptions(select="best_of_n", samples=3, max_steps=4)
            env = TextEnvironment(shop.url)
            result = await run_episode(client, env, policy, "Find USB-C cables", options)
    for step in result.steps:
        pairs = zip(step.candidates, step.rewards, strict=True)
        scored = ", ".join(f"{c.action} {r}" for c, r in pairs)
        print(f"step {step.step}: {scored}\n  ran {step.chosen and step.chosen.action}")
    print("outcome:", result.outcome)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chat", nargs=2, metavar=("BASE_URL", "MODEL"), default=None)
    asyncio.run(main(parser.parse_args().chat))
# --- README ---
