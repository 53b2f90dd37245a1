"""``webshepherd rescore PATH``: score a finished run made without webshepherd (a browser-use
history, an AgentLab folder, a JSONL run, or a webshepherd recording) and say where it went
wrong. Runs against the daemon at ``--url`` / ``$WEBSHEPHERD_URL`` (default address), or one
started in this process with ``--model``, as the demo does. Files the run names are read only
under its own folder or one named with ``--allow-dir``; the token comes from
``--token-file``, ``$WEBSHEPHERD_TOKEN`` or the local store, never from argv."""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webshepherd.daemon.cli.progress import ProgressBar
from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.secrets import add_token_arguments, token_from_args
from webshepherd.protocol.steps import step_label, step_number
from webshepherd.protocol.terminal_text import terminal_safe

if TYPE_CHECKING:
    from webshepherd.daemon.offline.imports import ImportedRun
    from webshepherd.daemon.offline.rescore import RescoreResult

MARK = {0: "✗", 1: "~", 2: "✓"}


def add_rescore_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    r: argparse.ArgumentParser = sub.add_parser(
        "rescore",
        help="score a finished run (browser-use history, AgentLab folder, JSONL run, "
        "webshepherd recording) and name its first bad steps",
    )
    r.add_argument("path", type=Path, help="the run: a file or a folder (docs/rescore.md)")
    r.add_argument("--intent", default=None, help="the task, when the run does not say it")
    r.add_argument(
        "--checklist",
        default=None,
        help="reference checklist text ('Checklist 1: …' lines); default: the run's own, "
        "else the judge writes one from the intent",
    )
    r.add_argument("--session", default=None, help="with a recording: which session")
    r.add_argument(
        "--model",
        default=None,
        help="start a daemon in this process with this model ('tiny': the tiny model); "
        "default: use the running daemon",
    )
    r.add_argument("--vision", action="store_true", help="the judge reads screenshots")
    r.add_argument("--url", default=None, help="daemon URL (default $WEBSHEPHERD_URL or local)")
    add_token_arguments(r)
    r.add_argument(
        "--allow-dir",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a folder the run's files (screenshots) may also be read from; default: only "
        "the run's own folder (repeatable)",
    )
    r.add_argument("--samples", type=int, default=None, help="completions per step")
    r.add_argument(
        "--stalled-after",
        type=_positive,
        default=None,
        help="steps without checklist progress before the stalled signal (default 3)",
    )
    r.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="the recording: where --model records, and where the report reads a running "
        "daemon's session (default: the daemon's default)",
    )
    r.add_argument(
        "--out", type=Path, default=None, help="HTML report (default: under the data dir)"
    )
    r.add_argument("--json", type=Path, default=None, help="write the summary here as JSON")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(func=cmd_rescore)


def _positive(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError("a number of steps from 1 to 1000")
    return value


def cmd_rescore(args: argparse.Namespace) -> int:
    from webshepherd.daemon.config import default_data_dir
    from webshepherd.daemon.offline.imports import load_run

    run = load_run(args.path, args.session, args.allow_dir)
    token = token_from_args(args)
    if args.intent:
        run.intent = args.intent
    data_dir = args.data_dir or default_data_dir()
    bar = ProgressBar("rescore", "step", total=len(run.steps), quiet=args.quiet)
    try:
        result = asyncio.run(_score(run, args, token, data_dir, bar))
    finally:
        bar.close()
    result.report = _report(data_dir, result.session_id, args.out)
    for line in summary_lines(result, args.path):
        print(line)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result.summary(), indent=2), encoding="utf-8")
    return 0


async def _score(
    run: ImportedRun, args: argparse.Namespace, token: str | None, data_dir: Path, bar: ProgressBar
) -> RescoreResult:
    from webshepherd.daemon.offline.rescore import rescore

    kw: dict[str, Any] = dict(
        checklist=args.checklist,
        samples=args.samples,
        vision=args.vision,
        stalled_after=args.stalled_after,
        on_step=lambda done, total: bar.reached(done, total),
    )
    if args.model is None:
        return await rescore(run, args.url, token, **kw)
    from rich.console import Console
    from webshepherd.daemon.build import in_process_daemon
    from webshepherd.daemon.demo.demo_setup import load_demo_engine

    console = Console(stderr=True)
    samples = args.samples or 1
    model = None if args.model == "tiny" else args.model
    engine, _ = await asyncio.to_thread(load_demo_engine, model, console, vision=args.vision)
    with tempfile.TemporaryDirectory(prefix="webshepherd-rescore-") as config_dir:
        async with in_process_daemon(engine, data_dir, Path(config_dir), samples) as (
            server,
            token,
        ):
            return await rescore(run, server.url, token, **kw)


def _report(data_dir: Path, session_id: str, out: Path | None) -> str | None:
    """The session's HTML report, when its recording is in ``data_dir``."""
    from webshepherd.daemon.cli.report import write_report
    from webshepherd.protocol.errors import WebShepherdError

    if not (data_dir / DB_NAME).is_file():
        return None
    try:
        return str(write_report(data_dir, session_id, out))
    except WebShepherdError:
        return None  # the daemon records elsewhere (pass its --data-dir)


def summary_lines(result: RescoreResult, path: Path) -> list[str]:
    """What ``rescore`` prints (untrusted texts made terminal-safe)."""
    run = result.run
    skipped = [s for s in result.steps if s.skipped]
    out = [
        f"rescored {run.kind} run {terminal_safe(str(path))}",
        f"  task: {terminal_safe(run.intent)}",
        f"  session {result.session_id} (source import): {result.scored} of "
        f"{len(result.steps)} steps scored" + (f", {len(skipped)} skipped" if skipped else ""),
        f"  checklist ({result.checklist_source}):",
        *(f"    {i}. {terminal_safe(title)}" for i, title in result.checklist),
    ]
    notes = {s.note for s in run.steps if s.note}
    out += [f"  observation text: {terminal_safe(n)}" for n in sorted(notes)]
    out.append("  step  reward  checklist  action")
    for s in result.steps:
        reward = "  —   " if s.reward is None else f"{s.reward:6.3f}"
        marks = "".join(MARK[lv] for _, lv in sorted(s.levels.items())) or "·"
        line = f"  {step_number(s.step):4d}  {reward}  {marks:9}  {terminal_safe(s.action)[:60]}"
        out.append(line + (f"   (skipped: {s.skipped})" if s.skipped else ""))
    for n, why in run.skipped:
        out.append(f"  entry {n} of the run not replayed: {terminal_safe(why)}")
    out += [f"  warning: {terminal_safe(w)}" for w in run.warnings]
    for label, bad in (("progress", result.bad.progress), ("reward", result.bad.reward)):
        if bad is None:
            out.append(f"first bad step ({label}): none")
            continue
        where = step_label(bad.step)
        out.append(f"first bad step ({label}): {where}: {terminal_safe(bad.detail)}")
        out.append(f"  judge's feedback: {terminal_safe(bad.feedback)[:400]}")
    stalled = [s for s in result.signals if s.get("kind") == "stalled"]
    if stalled:
        first = stalled[0]
        where = step_label(first["step"])
        out.append(f"stalled: from {where} ({terminal_safe(first['detail'])})")
    out.append(f"report: {result.report}" if result.report else "report: none (see --data-dir)")
    return out
