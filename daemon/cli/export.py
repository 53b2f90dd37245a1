"""``webshepherd export``: recorded sessions as training data, in the formats of
offline/export/formats.py's table (this module only reads it)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

from webshepherd.daemon.cli.progress import ProgressBar
from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.offline.export.formats import EXPORTERS, ExportOptions
from webshepherd.protocol.errors import WebShepherdError


def add_export_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    e = sub.add_parser(
        "export",
        help="recorded sessions as training data (WebPRM preference pairs, SFT rows, TRL "
        "datasets, Online-Mind2Web trajectories)",
    )
    e.add_argument(
        "--format",
        choices=list(EXPORTERS),
        required=True,
        help="; ".join(f"{name}: {x.help}" for name, x in EXPORTERS.items())
        + " (docs/export-formats.md)",
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
    e.add_argument(
        "--include-judged",
        action="store_true",
        help="webprm, trl-preference, trl-prm: also pair the chosen action with candidates "
        "nothing true is known of, where the rule-based filter calls them clear negatives and "
        "the judge scored them lower (marked source 'judge'); by default rows come from truth "
        "only: a person, labels, the env's outcome",
    )
    e.add_argument(
        "--generated-checklists",
        action="store_true",
        help="webprm, trl-prm: write a checklist the judge generated where the task's own "
        "goes (marked checklist_source 'generated'); by default only a reference checklist is",
    )
    e.add_argument("--data-dir", type=Path, default=None, help="where the recording lives")
    e.add_argument(
        "--quiet", action="store_true", help="print nothing but errors (no progress, no summary)"
    )
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


def cmd_export(args: argparse.Namespace) -> int:
    from webshepherd.daemon.config import default_data_dir, output_dir
    from webshepherd.daemon.recorder import History

    data_dir = args.data_dir or default_data_dir()
    if args.out is None:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        args.out = output_dir(data_dir, "exports") / f"{args.format}-{stamp}"
    fmt = EXPORTERS[args.format]
    files = fmt.files(args.out)
    opts = ExportOptions(
        args.redact,
        args.sft_layout,
        args.screenshots,
        args.include_judged,
        args.generated_checklists,
    )
    history = History.open(data_dir / DB_NAME)
    try:
        sessions = history.sessions(args.sessions, _since(args.since))
        bar = ProgressBar(f"export {args.format}", "step", fmt.total(history, sessions), args.quiet)
        info = fmt.write(history, sessions, files, opts, bar.update)
        bar.close()
    finally:
        history.close()
    if not args.quiet:
        print(json.dumps(info, indent=2))
        print(fmt.done(info, len(sessions)), file=sys.stderr)
    return 0
