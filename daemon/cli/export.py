"""``webshepherd export``: recorded sessions as WebPRM preference pairs or SFT rows."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from webshepherd.daemon.cli.progress import ProgressBar
from webshepherd.daemon.config import DB_NAME
from webshepherd.protocol.errors import WebShepherdError


def add_export_parser(sub: Any) -> None:
    e = sub.add_parser(
        "export",
        help="recorded sessions as training data (WebPRM preference pairs, SFT rows, TRL "
        "datasets, Online-Mind2Web trajectories)",
    )
    e.add_argument(
        "--format",
        choices=["webprm", "sft", "trl-prm", "trl-preference", "mind2web"],
        required=True,
        help="webprm: WebPRM Collection pairs; sft: LLaMA-Factory rows (+ dataset_info.json); "
        "trl-prm: TRL stepwise supervision; trl-preference: TRL conversational preference; "
        "mind2web: <out>/<task_id>/result.json + trajectory/ screenshots (docs/export-formats.md)",
    )
    e.add_argument(
        "--out",
        type=Path,
        default=None,
        help="file (.parquet or .jsonl) or folder (both are written there; mind2web: a folder); "
        "default: a new folder under the data dir, <data dir>/exports/<format>-<time>/",
    )
    e.add_argument("--sessions", nargs="+", metavar="ID", default=None, help="only these")
    e.add_argument("--since", default=None, help="only sessions started on/after (ISO date)")
    e.add_argument(
        "--redact",
        action="append",
        default=[],
        metavar="REGEX",
        help="mask matches in every exported text (repeatable); password values always are",
    )
    e.add_argument(
        "--sft-layout",
        choices=["sharegpt", "alpaca"],
        default="sharegpt",
        help="LLaMA-Factory layout of sft rows (default sharegpt)",
    )
    e.add_argument(
        "--screenshots",
        action="store_true",
        help="webprm: also write each screenshot to images/ beside the output and name it in "
        "image_observation.path (the bytes are in the rows either way)",
    )
    e.add_argument("--data-dir", type=Path, default=None, help="where the recording lives")
    e.add_argument("--quiet", action="store_true", help="no progress bar")
    e.set_defaults(func=cmd_export)


def _since(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise WebShepherdError(f"--since {text!r}: expected an ISO date like 2026-05-01") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def _targets(out: Path, fmt: str) -> list[Path]:
    if out.suffix.lower() in (".parquet", ".jsonl"):
        return [out]
    if out.suffix:
        raise WebShepherdError(f"--out {out}: use a .parquet or .jsonl file, or a folder")
    return [out / f"{fmt}.parquet", out / f"{fmt}.jsonl"]


def cmd_export(args: argparse.Namespace) -> int:
    from webshepherd.daemon.config import default_data_dir, output_dir

    if args.out is None:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        args.out = output_dir(args.data_dir or default_data_dir(), "exports")
        args.out = args.out / f"{args.format}-{stamp}"
    if args.format == "mind2web":
        return _export_mind2web(args, args.data_dir or default_data_dir())
    from webshepherd.daemon.offline.export.webprm import Summary, sft_rows, webprm_rows
    from webshepherd.daemon.offline.export.writers import webprm_schema, write_jsonl, write_parquet
    from webshepherd.daemon.recorder import History

    data_dir = args.data_dir or default_data_dir()
    history = History.open(data_dir / DB_NAME)
    try:
        sessions = history.sessions(args.sessions, _since(args.since))
        targets = _targets(args.out, args.format)
        base = targets[0].parent
        total = sum(history.scored_steps(s.session_id) for s in sessions)
        bar = ProgressBar(f"export {args.format}", "step", total, args.quiet)
        summary = Summary()
        if args.format == "webprm":
            rows = list(
                webprm_rows(
                    history,
                    sessions,
                    args.redact,
                    image_dir=base / "images" if args.screenshots else None,
                    image_ref=lambda p: os.path.relpath(p, base),
                    progress=bar.update,
                    summary=summary,
                )
            )
        elif args.format in ("trl-prm", "trl-preference"):
            from webshepherd.daemon.offline.export.trl import trl_preference_rows, trl_prm_rows

            make = trl_prm_rows if args.format == "trl-prm" else trl_preference_rows
            rows = list(make(history, sessions, args.redact, progress=bar.update, summary=summary))
        else:
            rows = list(
                sft_rows(
                    history,
                    sessions,
                    args.redact,
                    layout=args.sft_layout,
                    progress=bar.update,
                    summary=summary,
                )
            )
        bar.close()
    finally:
        history.close()
    for t in targets:
        if t.suffix == ".parquet":
            write_parquet(rows, t, webprm_schema() if args.format == "webprm" else None)
        else:
            write_jsonl(rows, t)
    info = summary.as_dict()
    info["files"] = [str(t) for t in targets]
    if args.format == "sft":
        from webshepherd.daemon.offline.export.llamafactory import DATASET_NAME, write_dataset_info

        data_file = next((t for t in targets if t.suffix == ".jsonl"), targets[0])
        entry = write_dataset_info(data_file.parent, data_file.name, args.sft_layout)
        info["files"].append(str(entry))
        info["llamafactory_dataset"] = DATASET_NAME
    print(json.dumps(info, indent=2))
    print(
        f"exported {info['rows']} rows from {len(sessions)} sessions "
        f"({info['skipped']} {'candidates and checklists' if args.format == 'sft' else 'steps'} "
        "skipped: "
        f"{', '.join(f'{k} {v}' for k, v in info['skipped_by_reason'].items()) or 'none'})",
        file=sys.stderr,
    )
    return 0


def _export_mind2web(args: argparse.Namespace, data_dir: Path) -> int:
    from webshepherd.daemon.offline.export.mind2web import write_mind2web
    from webshepherd.daemon.recorder import History

    if args.out.suffix:
        raise WebShepherdError(f"--out {args.out}: mind2web writes a folder (one per session)")
    history = History.open(data_dir / DB_NAME)
    try:
        sessions = history.sessions(args.sessions, _since(args.since))
        total = sum(s.steps for s in sessions)
        bar = ProgressBar("export mind2web", "step", total, args.quiet)
        info = write_mind2web(
            history, [s.session_id for s in sessions], args.out, args.redact, bar.update
        )
        bar.close()
    finally:
        history.close()
    info["files"] = [str(args.out)]
    print(json.dumps(info, indent=2))
    print(f"exported {info['rows']} sessions with {info['images']} screenshots", file=sys.stderr)
    return 0
