"""``webshepherd demo --trap``: the shop with a trap, step-by-step best-of-n against tree search.

The trap shop (:func:`~.variants.trap_variant`) lists a sold-out USB-C cable as the cheapest.
The scripted policy reads the results, believes it and proposes it as "the cheapest", with the
real cheapest as "the next cheapest". It adds to the cart only the cheapest listed product it
has not seen sold out, and proposes no way back (returning to an earlier state is the search's
job). The product page of the decoy says "Sold out" and has no "Add to cart".

Step-by-step best-of-n is stuck whichever product page it opens: on the decoy's, nothing
leads on; on the real cheapest's (the tiny judge that ships ranks that link a little higher,
0.45 to 0.38: its training shops' decoys taught it that the cheapest listed is sometimes sold
out), the policy, still believing the decoy cheaper, will not add it. Tree search, when its
judge values everything on a page no higher than an unexplored sibling (within
``tie_margin``), resets the shop and replays the search to that sibling: it tries the decoy,
sees it sold out, and back on the real cheapest's page the policy adds it and checks out.

The outcome is the shop's: ``success`` when the order holds the target, placed by the shopper.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.markup import escape
from webshepherd.daemon.demo.agent import ShopPolicy
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.text_env import TextEnvironment
from webshepherd.daemon.demo.variants import ShopVariant, trap_variant
from webshepherd.protocol.agents import EpisodeOptions, EpisodeResult, SearchTree, run_episode

TrapParadigm = Literal["step", "tree"]
#: distinct candidates the trap policy proposes at most on a page (all of them are scored)
BRANCHING = 6


@dataclass(frozen=True)
class TrapOptions:
    """One trap run: the paradigm, the policy's seed, reward samples per candidate, and how
    far it goes (steps for step-by-step; depth for tree search, with ``max_expansions``)."""

    paradigm: TrapParadigm = "tree"
    seed: int = 0
    samples: int = 1
    max_steps: int = 12
    max_expansions: int = 30


def trap_policy(seed: int = 0, shop: ShopVariant | None = None) -> ShopPolicy:
    """The scripted policy of the trap run: every candidate it has, no way back."""
    return ShopPolicy(seed=seed, bad_per_step=8, shop=shop or trap_variant(), backtrack=False)


async def run_trap(
    url: str, token: str, shop_server: ShopServer, opts: TrapOptions
) -> EpisodeResult:
    """One trap episode against the daemon at ``url`` (the shop served by ``shop_server``,
    set to the trap shop first and again at every reset)."""
    from webshepherd.protocol.client import AsyncClient

    shop = trap_variant()
    shop_server.use(shop)
    env = TextEnvironment(shop_server.url, on_reset=lambda: shop_server.use(shop))
    options = EpisodeOptions(
        paradigm=opts.paradigm,
        max_steps=opts.max_steps,
        top_n=BRANCHING,
        branching=BRANCHING,
        max_depth=opts.max_steps,
        max_expansions=opts.max_expansions,
        reward_samples=opts.samples,
        approval="never",
        checklist=shop.checklist,
        agent_name=f"trap-{opts.paradigm}",
    )
    async with AsyncClient(url, token) as client:
        return await run_episode(client, env, trap_policy(opts.seed, shop), shop.intent, options)


def ordered(shop_server: ShopServer) -> bool:
    """Whether the shop holds an order of exactly the target, placed by the shopper."""
    shop = shop_server.variant
    return any(
        o["items"] == [shop.target()["name"]] and o["name"] == shop.shopper
        for o in shop_server.state.orders
    )


def model_calls(result: EpisodeResult, samples: int) -> int:
    """Candidate judgements the run asked for (candidates scored times reward samples)."""
    if result.tree is not None:
        return result.tree.model_calls
    return sum(len(s.candidates) for s in result.steps) * samples


def tree_json(tree: SearchTree) -> dict[str, Any]:
    """The explored nodes as ``summary.json`` gives them."""
    return {
        "stop": tree.stop,
        "expansions": tree.expansions,
        "model_calls": tree.model_calls,
        "resets": tree.resets,
        "path": tree.path,
        "nodes": [
            {
                "id": n.node,
                "parent": n.parent,
                "depth": n.depth,
                "action": n.action,
                "thought": n.thought or "",
                "reward": n.reward,
                "status": n.status,
                "executed": n.executed,
                "replayed": n.replays > 0,
                "replays": n.replays,
                "url": n.url,
                "error": n.error,
            }
            for n in tree.nodes
        ],
    }


def trap_summary(
    result: EpisodeResult, shop_server: ShopServer, opts: TrapOptions
) -> dict[str, Any]:
    """``summary.json`` of a trap run: the shop's outcome, the path, and the tree's nodes."""
    shop = shop_server.variant
    out: dict[str, Any] = {
        "demo": "trap",
        "paradigm": opts.paradigm,
        "outcome": "success" if ordered(shop_server) else "failure",
        "agent_outcome": result.outcome,
        "answer": result.answer,
        "target": shop.target()["name"],
        "orders": [o["items"] for o in shop_server.state.orders],
        "session_id": result.session_id,
        "model_calls": model_calls(result, opts.samples),
        "steps": [
            {
                "step": s.step,
                "url": s.url,
                "action": s.chosen.action if s.chosen else None,
                "thought": s.chosen.thought if s.chosen else None,
                "reward": s.reward,
                "candidates": [
                    {"action": c.action, "reward": r}
                    for c, r in zip(s.candidates, s.rewards, strict=False)
                ],
            }
            for s in result.steps
        ],
    }
    if result.tree is not None:
        out["tree"] = tree_json(result.tree)
    return out


def print_trap(console: Console, summary: dict[str, Any]) -> None:
    """The run in the terminal: the path, and for tree search the tree."""
    console.print(f"[bold]trap shop, {summary['paradigm']}[/]: target {summary['target']!r}")
    tree = summary.get("tree")
    if tree is None:
        for s in summary["steps"]:
            r = s["reward"]
            console.print(f"  {r if r is None else f'{r:.3f}'}  {escape(s['action'] or '')}")
    else:
        path = set(tree["path"])
        kids: dict[int | None, list[dict[str, Any]]] = {}
        for n in tree["nodes"]:
            kids.setdefault(n["parent"], []).append(n)

        def walk(nid: int, indent: str) -> None:
            for n in kids.get(nid, []):
                if not n["executed"]:
                    continue
                mark = "[green]●[/]" if n["id"] in path else "[red]○[/]"
                extra = " (replayed)" if n["replayed"] else ""
                console.print(
                    f"{indent}{mark} #{n['id']} {n['reward']:.3f} {escape(n['action'] or '')}"
                    f"[dim]{extra} {n['status']}[/]"
                )
                walk(n["id"], indent + "  ")

        walk(0, "  ")
        unexplored = sum(not n["executed"] for n in tree["nodes"])
        console.print(
            f"  [dim]{tree['expansions']} expansions, {tree['resets']} resets, "
            f"{unexplored} scored nodes left unexplored; stop: {tree['stop']}[/]"
        )
    colour = "green" if summary["outcome"] == "success" else "red"
    console.print(
        f"[{colour}]{summary['outcome']}[/]: orders {summary['orders']}, "
        f"{summary['model_calls']} model calls"
    )


def run_trap_demo(
    model: str | None = None,
    paradigm: TrapParadigm = "tree",
    out: Path | None = None,
    seed: int = 0,
    samples: int = 1,
    max_steps: int = 12,
    keep: bool = False,
    guards: bool = False,
) -> int:
    """``webshepherd demo --trap``: exit 0 whatever the outcome (the run is the point)."""
    from webshepherd.daemon.demo.demo_setup import (
        demo_servers,
        load_demo_engine,
        print_commits_note,
    )

    console = Console()
    print_commits_note(console, guards)
    engine, _ = load_demo_engine(model, console)
    workdir = Path(tempfile.mkdtemp(prefix="webshepherd-trap-"))
    opts = TrapOptions(paradigm=paradigm, seed=seed, samples=samples, max_steps=max_steps)

    async def go() -> dict[str, Any]:
        async with demo_servers(engine, workdir, samples, trap_variant(), hold_commits=guards) as (
            srv,
            token,
            shop,
        ):
            result = await run_trap(srv.url, token, shop, opts)
            return trap_summary(result, shop, opts)

    try:
        summary = asyncio.run(go())
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if keep:
        summary["data_dir"] = str(workdir / "data")
    print_trap(console, summary)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", "utf-8")
        console.print(f"wrote {out / 'summary.json'}")
    return 0
