"""The tiny judge: how long its training takes here, and how well the demo agrees with it.

    .venv/bin/python bench/judge_training.py [--steps N] [--variants 1 2 3] [--json FILE]
    .venv/bin/python bench/judge_training.py --judge "$(.venv/bin/webshepherd dev tiny-model)"

Builds the tiny judge from scratch into a temporary folder (generated shop episodes, then
``webshepherd train`` for ``--steps`` steps on CPU, as ``make tiny-judge-rebuild`` does) and
times each phase. Then runs the text demo (``webshepherd demo --out``, the daemon in-process,
two samples per candidate) with the untrained base and with the trained judge on the bundled
shop, and with the trained judge on shop variants it never saw, and prints, per run, how many
candidates got a reward (parsed) and in how many steps the good action was ranked first.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any


def demo_agreement(model: Path, variant: int, out: Path) -> dict[str, Any]:
    """One text demo run with ``model`` on shop ``variant``; its totals."""
    from rich.console import Console
    from webshepherd.daemon.demo.run import run_demo

    console = Console(file=open("/dev/null", "w"))  # noqa: SIM115 (the demo's own output)
    run_demo(model=str(model), shop_variant=variant, out=out, plot=False, console=console)
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    t = summary["totals"]
    return {
        "variant": variant,
        "steps": t["steps"],
        "agreed": t["agreed"],
        "candidates": t["candidates"],
        "parsed": t["parsed"],
        "outcome": summary["outcome"]["status"],
    }


def main() -> None:
    from webshepherd.daemon.dev import tiny_model

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--steps", type=int, default=tiny_model.STEPS)
    ap.add_argument("--variants", type=int, nargs="*", default=[1, 2, 3])
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    ap.add_argument(
        "--judge",
        type=Path,
        default=None,
        help="a tiny judge already built (its card gives the training figures): skip the build",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-judge-") as tmp:
        base = Path(tmp)
        t0 = time.monotonic()
        if args.judge is not None:
            judge = args.judge
        else:
            judge = tiny_model.build_tiny_model(base / "judge", steps=args.steps, progress=True)
        marker_build = json.loads((judge / tiny_model.MARKER).read_text("utf-8"))
        build_s = marker_build["build_seconds"] if args.judge else time.monotonic() - t0
        marker = json.loads((judge / tiny_model.MARKER).read_text("utf-8"))
        card = json.loads((judge / "webshepherd-train.json").read_text("utf-8"))
        untrained = base / "untrained"
        tiny_model.save_untrained_base(untrained)
        runs = {"untrained, shop 0": demo_agreement(untrained, 0, base / "u0")}
        runs["trained, shop 0"] = demo_agreement(judge, 0, base / "t0")
        for v in args.variants:
            runs[f"trained, unseen shop {v}"] = demo_agreement(judge, v, base / f"t{v}")
    figures = {
        "steps": marker["steps"],
        "examples": card["examples"],
        "parameters": marker["parameters"],
        "build_s": round(build_s, 1),
        "train_s": card["train_seconds"],
        "final_loss": round(marker["final_loss"], 4),
        "demo": runs,
    }
    print(json.dumps(figures, indent=2))
    print(
        f"tiny judge: {figures['parameters']:,} parameters, {figures['steps']} steps on "
        f"{figures['examples']} examples, built in {figures['build_s']} s "
        f"(training {figures['train_s']} s)"
    )
    for name, r in runs.items():
        print(
            f"  {name:<24} good action first in {r['agreed']}/{r['steps']} steps, rewards "
            f"parsed for {r['parsed']}/{r['candidates']} candidates, {r['outcome']}"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
