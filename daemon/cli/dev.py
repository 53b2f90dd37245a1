"""``webshepherd dev``: developer tools (``tiny-model`` builds the tiny test model, with
``--vision`` the tiny vision-language one)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def cmd_tiny_model(args: argparse.Namespace) -> int:
    if args.vision:
        from webshepherd.daemon.dev.tiny_vision import build_tiny_vision_model

        seconds = args.seconds if args.seconds is not None else 30.0
        path = build_tiny_vision_model(
            args.path, seconds=seconds, seed=args.seed, progress=not args.quiet
        )
        print(path)
        return 0
    from webshepherd.daemon.dev.tiny_model import build_tiny_model

    path = build_tiny_model(
        args.path,
        seconds=args.seconds if args.seconds is not None else 45.0,
        seed=args.seed,
        progress=not args.quiet,
    )
    print(path)
    return 0


def add_dev_parser(sub: Any) -> None:
    dev: argparse.ArgumentParser = sub.add_parser("dev", help="developer tools")
    dsub = dev.add_subparsers(dest="dev_command", metavar="TOOL", required=True)
    tm = dsub.add_parser("tiny-model", help="build the tiny test model at PATH")
    tm.add_argument("path", type=Path)
    tm.add_argument(
        "--vision",
        action="store_true",
        help="a tiny vision-language model (Qwen2.5-VL, image processor, image tokens), "
        "trained from the tiny text model (cached, built first if missing)",
    )
    tm.add_argument(
        "--seconds",
        type=float,
        default=None,
        help="CPU training time (default 45; 30 with --vision)",
    )
    tm.add_argument("--seed", type=int, default=0)
    tm.add_argument("--quiet", action="store_true", help="no progress bar")
    tm.set_defaults(func=cmd_tiny_model)
