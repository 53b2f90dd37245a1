"""``webshepherd train``: fine-tune a judge checkpoint on what the project records (SFT rows
from ``webshepherd export --format sft``, the shop's generated episodes, or a data dir of
recorded sessions), into a folder ``webshepherd serve --model`` loads."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from webshepherd.protocol.errors import WebShepherdError


def _data_paths(paths: list[Path], tmp: Path, quiet: bool) -> list[Path]:
    """Row files as given; a data dir of recorded sessions is exported to SFT rows first."""
    from webshepherd.daemon.config import DB_NAME

    out = []
    for p in paths:
        if p.is_dir() and (p / DB_NAME).exists():
            from webshepherd.daemon.offline.training.recorded import export_sft

            rows = tmp / f"{p.name or 'data'}-sft.jsonl"
            n = export_sft(p, rows, quiet=quiet)
            if not quiet:
                print(f"{p}: {n} SFT rows from the recorded sessions", file=sys.stderr)
            out.append(rows)
        else:
            out.append(p)
    return out


def cmd_train(args: argparse.Namespace) -> int:
    from webshepherd.daemon.offline.training.train import TrainOptions, train

    if args.steps is not None and args.steps < 1:
        raise WebShepherdError("--steps must be at least 1")
    with tempfile.TemporaryDirectory(prefix="webshepherd-train-") as tmp:
        data = _data_paths(list(args.data), Path(tmp), args.quiet)
        opts = TrainOptions(
            base=args.base,
            out=args.out,
            data=tuple(data),
            steps=args.steps,
            epochs=args.epochs,
            learning_rate=args.lr,
            batch_size=args.batch_size,
            seed=args.seed,
            device=args.device,
            lora_rank=args.lora,
            max_length=args.max_length,
            progress=not args.quiet,
        )
        out = train(opts)
    card = json.loads((out / "webshepherd-train.json").read_text("utf-8"))
    print(
        f"trained {card['steps']} steps on {card['examples']} examples "
        f"(final loss {card['final_loss']:.4f}, {card['train_seconds']} s); "
        f"serve it with: webshepherd serve --model {out}"
    )
    return 0


def add_train_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    t: argparse.ArgumentParser = sub.add_parser(
        "train",
        help="fine-tune a judge on recorded sessions or SFT rows (TRL SFTTrainer)",
        description="Supervised fine-tuning of a judge checkpoint on checklist generation and "
        "judgements, in the prompt format the daemon serves. Targets come from ground truth "
        "(docs/training.md).",
    )
    t.add_argument(
        "--base",
        required=True,
        help="the checkpoint to start from (a folder or a model id in the local cache)",
    )
    t.add_argument(
        "--data",
        type=Path,
        nargs="+",
        required=True,
        help="SFT rows (.jsonl/.parquet from `webshepherd export --format sft`, or a folder of "
        "them), or a data dir of recorded sessions",
    )
    t.add_argument("--out", type=Path, required=True, help="folder for the trained checkpoint")
    t.add_argument("--steps", type=int, default=None, help="optimiser steps (default: epochs)")
    t.add_argument("--epochs", type=float, default=1.0, help="passes over the data (default 1)")
    t.add_argument("--lr", type=float, default=2e-5, help="peak learning rate (default 2e-5)")
    t.add_argument("--batch-size", type=int, default=8, help="examples per step (default 8)")
    t.add_argument("--seed", type=int, default=0, help="seed of the initialisation and order")
    t.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    t.add_argument(
        "--lora",
        type=int,
        default=None,
        metavar="RANK",
        help="train LoRA adapters of this rank (peft) and merge them (for big checkpoints)",
    )
    t.add_argument("--max-length", type=int, default=4096, help="tokens per example (default 4096)")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(func=cmd_train)
