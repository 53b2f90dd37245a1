"""``webshepherd demo``: the tiny model, the bundled shop site and a scripted agent (in a
terminal, or in Chromium with the extension's overlay)."""

from __future__ import annotations

import argparse
from pathlib import Path


def cmd_demo(args: argparse.Namespace) -> int:
    if args.trap:
        if args.browser or args.vision or args.variant:
            print("webshepherd demo: --trap runs the terminal demo of its own shop")
            return 2
        from webshepherd.daemon.demo.trap import run_trap_demo

        return run_trap_demo(
            model=args.model,
            paradigm=args.paradigm,
            out=Path(args.out) if args.out else None,
            seed=args.seed,
            samples=args.samples,
            max_steps=min(args.max_steps, 15),
            keep=args.keep,
            guards=args.guards,
        )
    if args.browser and args.vision:
        print("webshepherd demo: --vision runs the terminal demo (not --browser)")
        return 2
    if args.browser:
        from webshepherd.daemon.demo.run_browser import BrowserDemoOptions, run_browser_demo

        opts = BrowserDemoOptions(
            headless=args.headless,
            out=Path(args.out) if args.out else None,
            samples=args.samples,
            max_steps=args.max_steps,
            seed=args.seed,
            policy=args.policy,
            approval_timeout_s=args.approval_timeout,
            keep=args.keep,
            guards=args.guards,
        )
        return run_browser_demo(opts, model=args.model)
    from webshepherd.daemon.demo.run import run_demo

    return run_demo(
        model=args.model,
        vision=args.vision,
        samples=args.samples,
        max_steps=args.max_steps,
        seed=args.seed,
        policy=args.policy,
        keep=args.keep,
        plot=not args.no_plot,
        shop_variant=args.variant,
        out=Path(args.out) if args.out else None,
        guards=args.guards,
    )


def add_demo_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    d: argparse.ArgumentParser = sub.add_parser(
        "demo", help="offline demo: tiny model, bundled shop site, scripted agent"
    )
    d.add_argument(
        "--model",
        default=None,
        help="model id or folder (default: the tiny judge shipped with the package)",
    )
    d.add_argument(
        "--vision",
        action="store_true",
        help="judge with the screenshot in the prompt (--judge-inputs text+image): the tiny "
        "vision-language model (built on first use) and each page drawn as a small PNG",
    )
    d.add_argument("--samples", type=int, default=2, help="completions per candidate (default 2)")
    d.add_argument("--max-steps", type=int, default=40, help="give up after this many steps")
    d.add_argument("--seed", type=int, default=0, help="seed of the agent's bad candidates")
    d.add_argument(
        "--policy",
        choices=("scripted", "reward"),
        default="scripted",
        help="run the script's good action (default), or the best-rewarded candidate "
        "(reward-guided best-of-n: meaningful with the real checkpoint)",
    )
    d.add_argument(
        "--variant",
        type=int,
        default=0,
        help="the shop: 0 the bundled one (default); N >= 1 a variant with other products, "
        "prices and names that the tiny judge never saw",
    )
    d.add_argument(
        "--trap",
        action="store_true",
        help="the shop with a trap (a sold-out cable listed as the cheapest), run by "
        "--paradigm: step-by-step best-of-n stalls, tree search backtracks out",
    )
    d.add_argument(
        "--paradigm",
        choices=("tree", "step"),
        default="tree",
        help="with --trap: tree search (default) or step-by-step best-of-n",
    )
    d.add_argument("--keep", action="store_true", help="keep the temporary data dir (recording)")
    d.add_argument("--no-plot", action="store_true", help="skip the terminal reward plot")
    d.add_argument(
        "--browser",
        action="store_true",
        help="the shop in Chromium with the extension's overlay and an approval (needs "
        "`make extension` and the chromium package)",
    )
    d.add_argument(
        "--headless",
        action="store_true",
        help="with --browser: no window, no person; the demo itself rejects the held "
        "action through the extension's side panel (the step's own choice runs instead) and "
        "writes screenshots and summary.json to --out",
    )
    d.add_argument(
        "--out",
        default=None,
        help="folder for summary.json (with --browser also the screenshots; headless "
        "default: ./webshepherd-demo)",
    )
    d.add_argument(
        "--approval-timeout",
        type=float,
        default=300.0,
        help="with --browser: seconds the held action waits for a decision, then it is "
        "rejected (default 300)",
    )
    d.add_argument(
        "--guards",
        action="store_true",
        help="hold the shop's commits for a person (by default the demos make the shop a "
        "sandbox origin, as serve --sandbox-origin does: their agent orders unattended and "
        "each commit is flagged); with nobody paired (the terminal demos), the first step that "
        "commits is refused; with --browser each waits for you in the extension's side panel or "
        "popup (headless: the demo approves it there)",
    )
    d.set_defaults(func=cmd_demo)
