"""``webshepherd dev``: developer tools (``tiny-model`` builds the tiny judge, with ``--vision``
the tiny vision-language model; ``shop-episodes`` writes the shop's labelled training rows)."""

from __future__ import annotations

import argparse
from pathlib import Path


def cmd_tiny_model(args: argparse.Namespace) -> int:
    if args.vision:
        from webshepherd.daemon.dev.tiny_vision import STEPS as VISION_STEPS
        from webshepherd.daemon.dev.tiny_vision import (
            build_tiny_vision_model,
            ensure_tiny_vision_model,
        )

        if args.path is None:
            print(ensure_tiny_vision_model(progress=not args.quiet))
            return 0
        steps = args.steps if args.steps is not None else VISION_STEPS
        path = build_tiny_vision_model(
            args.path, steps=steps, seed=args.seed, progress=not args.quiet
        )
        print(path)
        return 0
    from webshepherd.daemon.dev.tiny_model import STEPS, build_tiny_model, ensure_tiny_model

    if args.path is None:  # the shipped judge (or $WEBSHEPHERD_TINY_MODEL, built if missing)
        print(ensure_tiny_model(progress=not args.quiet))
        return 0
    path = build_tiny_model(
        args.path,
        steps=args.steps if args.steps is not None else STEPS,
        seed=args.seed,
        progress=not args.quiet,
    )
    print(path)
    return 0


def cmd_shop_episodes(args: argparse.Namespace) -> int:
    from webshepherd.daemon.dev.tiny_model import training_rows
    from webshepherd.daemon.offline.export.writers import write_jsonl

    n = write_jsonl(args.out, training_rows(args.seed, episodes=args.episodes, formats=0))
    print(f"wrote {n} SFT rows of {args.episodes} shop episodes to {args.out}")
    return 0


def add_dev_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dev: argparse.ArgumentParser = sub.add_parser("dev", help="developer tools")
    dsub = dev.add_subparsers(dest="dev_command", metavar="TOOL", required=True)
    tm = dsub.add_parser(
        "tiny-model",
        help="build the tiny judge at PATH: generated shop episodes, then `webshepherd train` "
        "for a fixed number of steps (the judge shipped in the package was built so)",
    )
    tm.add_argument(
        "path",
        type=Path,
        nargs="?",
        default=None,
        help="where to build it (default: print where the judge the demo and tests use is: "
        "the one shipped in the package, or $WEBSHEPHERD_TINY_MODEL, built there if missing; "
        "with --vision the user cache, built if missing)",
    )
    tm.add_argument(
        "--vision",
        action="store_true",
        help="a tiny vision-language model (Qwen2.5-VL, image processor, image tokens), "
        "trained from the tiny text model (cached, built first if missing)",
    )
    tm.add_argument(
        "--steps",
        type=int,
        default=None,
        help="training steps (default: the tiny judge's or the vision model's fixed count)",
    )
    tm.add_argument("--seed", type=int, default=0)
    tm.add_argument("--quiet", action="store_true", help="no progress bar")
    tm.set_defaults(func=cmd_tiny_model)
    ep = dsub.add_parser(
        "shop-episodes",
        help="write SFT rows of generated shop episodes, labelled by the shop (train data)",
    )
    ep.add_argument("out", type=Path, help="the .jsonl file to write")
    ep.add_argument("--episodes", type=int, default=20)
    ep.add_argument("--seed", type=int, default=0)
    ep.set_defaults(func=cmd_shop_episodes)
