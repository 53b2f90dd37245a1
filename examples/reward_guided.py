"""Reward-guided best-of-n on the bundled shop: `python examples/reward_guided.py`.

Needs a running daemon (`webshepherd serve`, at $WEBSHEPHERD_URL or ws://127.0.0.1:8765/v1;
offline: `webshepherd serve --model "$(webshepherd dev tiny-model --quiet)" --sandbox-origin
'http://127.0.0.1:*'`: the tiny judge knows this shop, and the sandbox origin lets the order,
a POST on loopback, run flagged instead of held for a person). The shop runs in this process
and its pages are read by the demo's text browser (no Chromium). Offline by default: the demo's
scripted shopper proposes, on each page, the action that makes progress and two distractors;
`--chat BASE_URL MODEL` uses a chat model instead (any OpenAI-compatible API; the key from
$OPENAI_API_KEY). The task is the shop's own (the cheapest USB-C cable, as Ada Lovelace) with
its reference checklist.

Prints each step's candidates with their rewards and the action that ran, then the outcome and
the shop's orders. With the tiny judge, roughly::

    step 1: fill('14', 'hdmi cable') 0.00, fill('14', 'usb-c cable') 0.12, click('11') 0.00
      ran fill('14', 'usb-c cable')
    step 2: click('15') 0.25, fill('14', 'hdmi cable') 0.00, click('11') 0.00
      ran click('15')
    ... (open the cheapest cable, add it to the cart, check out as Ada Lovelace)
    step 8: send_msg_to_user('Order VW-1001 is placed.') 1.00
      ran send_msg_to_user('Order VW-1001 is placed.')
    outcome: success
    orders: [['Basic USB-C cable, 1 m']]

The session ends with the outcome (`webshepherd tui` lists it as ended).

With a person paired (a paired `webshepherd tui` or extension connected, the default mode
`ask`), a step whose best reward is below the daemon's threshold (0.3: the tiny judge's first
step, 0.12) waits for that person, each time until they decide or `--approval-timeout` (120 s)
passes and `--approval-default` (reject) applies. Unattended: nobody paired, or `serve --mode
watch` (the order still runs flagged).
"""

# --- README ---
import argparse
import asyncio
import os

from webshepherd.daemon.demo.agent import CHECKLIST, TASK, ShopAgent, ShopPolicy
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
from webshepherd.protocol.client.script import one_line_errors
from webshepherd.protocol.common import Candidate

shopper = ShopPolicy(seed=0)  # the demo's scripted shopper: it knows the shop's task


def scripted(state: PageState, context: PolicyContext) -> list[Candidate]:
    """A stand-in for a language model: the action that makes progress and two distractors
    (the judge decides which runs); on the order's confirmation only the answer to the user."""
    candidates = shopper.propose(state, context)
    if ShopAgent.done(state.url):  # the order is placed: say so, which ends the episode
        return [c for c in candidates if c.action.startswith("send_msg_to_user(")]
    return candidates


def rounded(reward: float | None) -> str:
    return "none" if reward is None else f"{reward:.2f}"


async def main(chat: list[str] | None) -> None:
    policy = ChatPolicy(chat[0], chat[1], os.environ.get("OPENAI_API_KEY")) if chat else scripted
    with ShopServer() as shop:
        async with AsyncClient() as client:  # the daemon at $WEBSHEPHERD_URL or the default
            # best-of-n: the policy's distinct actions scored in one request, the best one runs
            options = EpisodeOptions(select="best_of_n", max_steps=10, checklist=CHECKLIST)
            env = TextEnvironment(shop.url)
            result = await run_episode(client, env, policy, TASK, options)
        orders = [o["items"] for o in shop.state.orders]
    for step in result.steps:
        pairs = zip(step.candidates, step.rewards, strict=True)
        scored = ", ".join(f"{c.action} {rounded(r)}" for c, r in pairs)
        print(f"step {step.step}: {scored}\n  ran {step.chosen and step.chosen.action}")
    print("outcome:", result.outcome)
    print("orders:", orders)


if __name__ == "__main__":
    one_line_errors()  # no daemon, a wrong token: the error's one line, no traceback (-v: with it)
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
    parser.add_argument("--chat", nargs=2, metavar=("BASE_URL", "MODEL"), default=None)
    asyncio.run(main(parser.parse_args().chat))
# --- README ---
