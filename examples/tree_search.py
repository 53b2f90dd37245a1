"""Tree search with Web-Shepherd as the value function: `python examples/tree_search.py`.

Needs a running daemon (`webshepherd serve`, at $WEBSHEPHERD_URL or ws://127.0.0.1:8765/v1;
offline: `webshepherd serve` loads the tiny judge when given `--model` its folder, or run
`webshepherd demo --trap` for everything in one process). The bundled shop with a trap (a
sold-out cable listed as the cheapest) runs in this process, read by the demo's text browser.
The search expands the state of highest reward; to return to an earlier state it resets the
shop and replays the actions that led there. `--paradigm step` runs best-of-n step by step
for comparison. Prints every explored node, every refused one with who refused it and why,
and whether the right cable was ordered.

Ordering commits: "Add to cart" posts a form. With `serve`'s defaults the daemon holds such a
step for a paired person (nobody paired: it refuses it, and the search goes on without it).
To let the search order in the bundled shop, which runs on loopback, start the daemon with
`webshepherd serve --sandbox-origin 'http://127.0.0.1:*'` (the shop's commits flagged and
recorded, never held) or `webshepherd serve --mode watch` (every session's commits run,
flagged).

With a person paired (a paired `webshepherd tui` or extension connected, the default mode
`ask`), "Add to cart" waits for that person instead of being refused, wherever the search
would run it, until they decide or `--approval-timeout` (120 s) passes; no reward waits (the
search scores with `approval="never"`). With `--sandbox-origin` as above, nothing waits.
"""

import argparse
import asyncio

from webshepherd.daemon.demo.agent import ShopPolicy
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.text_env import TextEnvironment
from webshepherd.daemon.demo.variants import trap_variant
from webshepherd.protocol.agents import EpisodeOptions, run_episode
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.client.script import one_line_errors
from webshepherd.protocol.terminal_text import terminal_safe


def rounded(reward: float | None) -> str:
    return "none" if reward is None else f"{reward:.2f}"


# --- README ---
async def main(paradigm: str) -> None:
    shop = trap_variant()
    with ShopServer(variant=shop) as server:
        env = TextEnvironment(server.url, on_reset=lambda: server.use(shop))  # reset: fresh shop
        policy = ShopPolicy(seed=0, bad_per_step=8, shop=shop, backtrack=False)  # no way back
        options = EpisodeOptions(
            paradigm=paradigm,  # "tree": best-first search; "step": best-of-n, step by step
            branching=6,  # candidates scored per node, in one request
            top_n=6,
            max_expansions=30,  # budgets: expansions, depth, model calls, wall time
            max_depth=12,
            max_steps=12,
            reward_samples=1,
            checklist=shop.checklist,
            approval="never",
        )
        async with AsyncClient() as client:  # the daemon at $WEBSHEPHERD_URL or the default
            result = await run_episode(client, env, policy, shop.intent, options)
        orders = [o["items"] for o in server.state.orders]
    if result.tree is not None:
        for node in result.tree.nodes:
            if node.executed and node.parent is not None:  # the root is the start page
                how = "path" if node.node in result.tree.path else "left"
                again = f", replayed {node.replays}x" if node.replays else ""
                print(
                    f"node {node.node} <- {node.parent}: {node.action} "
                    f"reward {rounded(node.reward)} ({how}{again})"
                )
            elif node.status == "failed" and node.guarded:  # refused: who, why, the way out
                print(f"node {node.node} <- {node.parent}: {terminal_safe(node.error or '')}")
        print(f"stop: {result.tree.stop}, resets: {result.tree.resets}")
    else:
        for step in result.steps:
            chosen = step.chosen and step.chosen.action
            print(f"step {step.step}: {chosen} reward {rounded(step.reward)}")
    wanted = [shop.target()["name"]]
    print("ordered the cheapest cable:", wanted in orders, "orders:", orders)


# --- README ---


if __name__ == "__main__":
    one_line_errors()  # no daemon, a wrong token: the error's one line, no traceback (-v: with it)
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
    parser.add_argument("--paradigm", choices=("tree", "step"), default="tree")
    asyncio.run(main(parser.parse_args().paradigm))
