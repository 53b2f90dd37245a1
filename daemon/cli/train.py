"""``webshepherd train``: fine-tune a judge checkpoint on what the project records (SFT rows
from ``webshepherd export --format sft``, the shop's generated episodes, or a data dir of
recorded sessions), into a folder ``webshepherd serve --model`` loads."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.terminal_text import terminal_safe

if TYPE_CHECKING:
    from webshepherd.daemon.offline.evaluation.recorded import PickSet


def _is_recording(path: Path) -> bool:
    from webshepherd.daemon.config import DB_NAME

    return path.is_dir() and (path / DB_NAME).exists()


def _data_paths(paths: list[Path], tmp: Path, quiet: bool, held_out: list[str]) -> list[Path]:
    """Row files as given; a data dir of recorded sessions is exported to SFT rows first
    (without the held-out sessions)."""
    out = []
    for i, p in enumerate(paths):
        if _is_recording(p):
            from webshepherd.daemon.offline.training.recorded import export_sft

            rows = tmp / f"{i}-{p.name or 'data'}-sft.jsonl"  # two data dirs may share a name
            n = export_sft(p, rows, quiet=quiet, exclude=held_out)
            if not quiet:
                print(f"{p}: {n} SFT rows from the recorded sessions", file=sys.stderr)
            if n:  # none: every session there is held out
                out.append(rows)
        else:
            out.append(p)
    return out


def _holdout(args: argparse.Namespace) -> tuple[list[str], PickSet | None]:
    """The sessions ``--holdout``/``--holdout-sessions`` keep out, and their steps to rank."""
    if args.holdout is None and not args.holdout_sessions:
        return [], None
    from webshepherd.daemon.offline.evaluation.recorded import (
        PickSet,
        pick_steps,
        recorded_sessions,
    )
    from webshepherd.daemon.offline.training.recorded import held_out

    dirs = [p for p in args.data if _is_recording(p)]
    if not dirs:
        raise WebShepherdError(
            "--holdout: name a data dir of recorded sessions in --data (the held-out "
            "sessions are scored from the recording, as `webshepherd eval recorded` does)"
        )
    picks = PickSet("")
    known: set[str] = set()
    for d in dirs:
        picks.add(pick_steps(d))
        known.update(recorded_sessions(d))
    missing = [s for s in args.holdout_sessions or [] if s not in known]
    if missing:
        raise WebShepherdError(
            f"--holdout-sessions: no recorded session {', '.join(missing)} in "
            + ", ".join(str(d) for d in dirs)
        )
    ids = held_out(picks.sessions(), args.holdout, args.holdout_sessions or [], args.seed)
    kept = picks.only(ids)
    if not kept.steps:
        raise WebShepherdError(
            f"--holdout-sessions: {', '.join(ids)} hold no step whose right candidate truth "
            "names among two or more scored candidates; nothing to score the judges on"
        )
    return ids, kept


def _score_held_out(args: argparse.Namespace, trained: Path, picks: PickSet) -> dict[str, Any]:
    """The starting and the trained judge on the held-out steps: the table, a warning when
    the trained judge's outputs stop parsing; returns the figures."""
    from webshepherd.daemon.offline.evaluation.recorded import (
        compare,
        model_judge,
        more_unparsed,
        table,
    )

    judges = [
        model_judge(args.base, args.device, name=f"starting: {args.base}"),
        model_judge(str(trained), args.device, name=f"trained: {trained}"),
    ]
    result = compare(picks, judges)
    print(f"held out: {', '.join(picks.sessions())}")
    for line in table(result):
        print(terminal_safe(line))
    warning = more_unparsed(*result.figures)
    if warning:
        print(warning, file=sys.stderr)
    figures = result.as_dict()
    figures["warning"] = warning
    return figures


def cmd_train(args: argparse.Namespace) -> int:
    from webshepherd.daemon.offline.training.train import CARD, TrainOptions, train

    if args.steps is not None and args.steps < 1:
        raise WebShepherdError("--steps must be at least 1")
    ids, picks = _holdout(args)
    with tempfile.TemporaryDirectory(prefix="webshepherd-train-") as tmp:
        data = _data_paths(list(args.data), Path(tmp), args.quiet, ids)
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
            held_out=tuple(ids),
        )
        out = train(opts)
    card_path = out / CARD
    card = json.loads(card_path.read_text("utf-8"))
    print(
        f"trained {card['steps']} steps on {card['examples']} examples "
        f"(final loss {card['final_loss']:.4f}, {card['train_seconds']} s); "
        f"serve it with: webshepherd serve --model {out}"
    )
    if picks is not None:
        card["held_out_scores"] = _score_held_out(args, out, picks)
        card_path.write_text(json.dumps(card, indent=1, default=str) + "\n", "utf-8")
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
    hold = t.add_mutually_exclusive_group()
    hold.add_argument(
        "--holdout",
        type=float,
        default=None,
        metavar="SHARE",
        help="keep this share of the recorded sessions (those with steps to rank) out of "
        "training, drawn by --seed, and score the starting and the trained judge on them "
        "(pick accuracy and unparsed outputs, as `webshepherd eval recorded`)",
    )
    hold.add_argument(
        "--holdout-sessions",
        nargs="+",
        metavar="ID",
        default=None,
        help="keep these recorded sessions out of training and score the judges on them",
    )
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(func=cmd_train)
