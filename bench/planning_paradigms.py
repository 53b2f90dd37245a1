"""Step-by-step, full plan and tree search at equal model-call budgets, on the shop variants.

    .venv/bin/python bench/planning_paradigms.py [--model DIR] [--variants 1 2 3] \
        [--budget 60] [--branching 4] [--samples 1] [--seeds 0 1] [--json FILE]

The daemon runs in-process with the judge (default: the tiny judge) and the bundled shop's
variants are served on loopback: each variant ``n`` as drawn (``plain``) and with a sold-out
decoy listed as its cheapest product (``trap``). The policy is the scripted shop agent made
noisy (its good action among ``branching - 1`` random distractors, sampled with repeats, no
way back from a page: that is the search's job). Every paradigm gets the same budget of model
calls (candidate judgements: candidates scored times reward samples): step and plan take at
most ``budget // branching`` steps of ``branching`` candidates; tree search stops once the
next expansion would pass ``budget``. Success is the shop's: an order of exactly the target,
placed by the shopper. Each seed of the noisy policy (``--seeds``) runs every shop and
paradigm once. Printed per paradigm and group: successes, mean model calls spent, and mean
wall time per episode.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

Paradigm = Literal["step", "plan", "tree"]

PARADIGMS: tuple[Paradigm, ...] = ("step", "plan", "tree")


async def episode(
    url: str,
    token: str,
    server: Any,
    shop: Any,
    paradigm: Paradigm,
    seed: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    from webshepherd.daemon.demo.agent import ShopPolicy
    from webshepherd.daemon.demo.text_env import TextEnvironment
    from webshepherd.daemon.demo.trap import model_calls, ordered
    from webshepherd.protocol.agents import EpisodeOptions, run_episode
    from webshepherd.protocol.client import AsyncClient

    server.use(shop)
    env = TextEnvironment(server.url, on_reset=lambda: server.use(shop))
    policy = ShopPolicy(seed=seed, bad_per_step=args.branching - 1, shop=shop, backtrack=False)
    steps = max(1, args.budget // args.branching)
    opts = EpisodeOptions(
        paradigm=paradigm,
        max_steps=steps,
        top_n=args.branching,
        branching=args.branching,
        max_model_calls=args.budget,
        max_expansions=args.budget,
        max_depth=20,
        reward_samples=args.samples,
        approval="never",
        checklist=shop.checklist,
    )
    t0 = time.perf_counter()
    async with AsyncClient(url, token) as client:
        result = await run_episode(client, env, policy, shop.intent, opts)
    return {
        "success": ordered(server),
        "model_calls": model_calls(result, args.samples),
        "seconds": time.perf_counter() - t0,
        "agent_outcome": result.outcome,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from rich.console import Console
    from webshepherd.daemon.demo.demo_setup import (
        demo_servers,
        load_demo_engine,
        print_commits_note,
    )
    from webshepherd.daemon.demo.variants import variant, with_decoy

    print_commits_note(Console(file=sys.stderr), args.guards)
    engine, _ = load_demo_engine(args.model, Console(file=sys.stderr))
    shops = []
    for n in args.variants:
        shops.append(("plain", n, variant(n)))
        shops.append(("trap", n, with_decoy(variant(n), random.Random(n), cheapest=True)))
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with demo_servers(engine, Path(tmp), args.samples, hold_commits=args.guards) as (
            srv,
            token,
            server,
        ):
            for seed in args.seeds:
                for group, n, shop in shops:
                    for paradigm in PARADIGMS:
                        r = await episode(srv.url, token, server, shop, paradigm, seed, args)
                        r.update(group=group, variant=n, paradigm=paradigm, seed=seed)
                        print(json.dumps(r), file=sys.stderr)
                        runs.append(r)
    table = []
    for group in ("plain", "trap", "all"):
        for paradigm in PARADIGMS:
            rs = [r for r in runs if r["paradigm"] == paradigm and group in (r["group"], "all")]
            if not rs:
                continue
            table.append(
                {
                    "group": group,
                    "paradigm": paradigm,
                    "episodes": len(rs),
                    "successes": sum(r["success"] for r in rs),
                    "mean_model_calls": statistics.mean(r["model_calls"] for r in rs),
                    "mean_seconds": statistics.mean(r["seconds"] for r in rs),
                }
            )
    from webshepherd.daemon.dev.tiny_model import TINY_MODEL_VERSION

    judge = args.model or f"tiny judge v{TINY_MODEL_VERSION}"
    return {"args": {k: v for k, v in vars(args).items() if k != "json"}, "judge": judge,
            "runs": runs, "table": table}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--model", default=None, help="judge (default: the tiny judge)")
    ap.add_argument("--variants", type=int, nargs="*", default=[1, 2, 3, 4, 5])
    ap.add_argument("--budget", type=int, default=60, help="model calls per episode")
    ap.add_argument("--branching", type=int, default=4, help="candidates per step or node")
    ap.add_argument("--samples", type=int, default=1, help="reward samples per candidate")
    ap.add_argument(
        "--seeds", type=int, nargs="*", default=[0], help="the noisy policy's seeds (each a run)"
    )
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    ap.add_argument(
        "--guards",
        action="store_true",
        help="hold the shop's commits for a person (by default the shop is a sandbox origin: "
        "the episodes order unattended, each commit flagged)",
    )
    args = ap.parse_args()
    out = asyncio.run(run(args))
    print(f"{'group':6} {'paradigm':8} {'success':>9} {'model calls':>12} {'s/episode':>10}")
    for row in out["table"]:
        print(
            f"{row['group']:6} {row['paradigm']:8} {row['successes']:>4}/{row['episodes']:<4} "
            f"{row['mean_model_calls']:>12.1f} {row['mean_seconds']:>10.1f}"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2) + "\n", "utf-8")


if __name__ == "__main__":
    main()
