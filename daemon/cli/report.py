"""``webshepherd report``: one recorded session as a self-contained HTML file."""

from __future__ import annotations

import argparse
import os
import sys
import time
import webbrowser
from collections.abc import Sequence
from pathlib import Path

from webshepherd.daemon.config import DB_NAME
from webshepherd.protocol.errors import WebShepherdError


def add_report_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    r = sub.add_parser(
        "report",
        help="a recorded session as one self-contained HTML file (screenshots, rewards, "
        "checklist, approvals)",
    )
    r.add_argument("session_id", nargs="?", default=None, help="the session (see --list)")
    r.add_argument("--list", action="store_true", help="list recent sessions with their ids")
    r.add_argument("--limit", type=int, default=20, help="with --list: how many (default 20)")
    r.add_argument(
        "--out",
        type=Path,
        default=None,
        help="HTML file (default <data dir>/reports/webshepherd-<id>.html)",
    )
    r.add_argument(
        "--redact",
        action="append",
        default=[],
        metavar="REGEX",
        help="mask matches in every text (repeatable); password values always are",
    )
    r.add_argument("--open", action="store_true", help="open the report in the web browser")
    r.add_argument("--data-dir", type=Path, default=None, help="where the recording lives")
    r.set_defaults(func=cmd_report)


def write_report(
    data_dir: Path, session_id: str, out: Path | None = None, redact: Sequence[str] = ()
) -> Path:
    """Render ``session_id`` of the recording in ``data_dir`` to ``out``; returns the path."""
    from webshepherd.daemon.config import output_dir
    from webshepherd.daemon.offline.report.render import render_report
    from webshepherd.daemon.recorder import History

    history = History.open(data_dir / DB_NAME)
    try:
        tl = history.timeline(session_id)
    finally:
        history.close()
    if tl is None:
        raise WebShepherdError(
            f"no recorded session {session_id!r} (`webshepherd report --list` shows them)"
        )
    page = render_report(tl, redact)
    path = out or output_dir(data_dir, "reports") / f"webshepherd-{session_id}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path


def list_sessions(data_dir: Path, limit: int) -> list[str]:
    """One line per recent session: id, start time, agent, steps, outcome, intent (what an
    agent or a page wrote, with terminal controls shown as escapes)."""
    from webshepherd.daemon.recorder import History
    from webshepherd.protocol.terminal_text import terminal_safe as safe

    history = History.open(data_dir / DB_NAME)
    try:
        sessions = history.list_sessions(limit)
    finally:
        history.close()
    return [
        f"{safe(s.session_id)}  {time.strftime('%Y-%m-%d %H:%M', time.localtime(s.created_at))}  "
        f"{safe(s.agent.name[:16]):16}  {s.steps:4d} steps  {(s.outcome or s.state):9}  "
        f"{safe(s.intent)}"
        for s in sessions
    ]


def cmd_report(args: argparse.Namespace) -> int:
    from webshepherd.daemon.config import default_data_dir
    from webshepherd.protocol.terminal_text import terminal_safe

    data_dir = args.data_dir or default_data_dir()
    if args.list:
        lines = list_sessions(data_dir, args.limit)
        print("\n".join(lines) if lines else "no recorded sessions")
        return 0
    if args.session_id is None:
        raise WebShepherdError("report: give a SESSION_ID (or --list to see them)")
    started = time.perf_counter()
    path = write_report(data_dir, args.session_id, args.out, args.redact)
    size = path.stat().st_size
    took = time.perf_counter() - started
    print(f"wrote {terminal_safe(str(path))} ({size / 1024:.0f} KiB in {took:.2f} s)")
    if args.open and not open_in_browser(path):
        print(f"no web browser to open it here; open {terminal_safe(str(path.resolve()))}")
    return 0


def open_in_browser(path: Path) -> bool:
    """Open ``path`` in the web browser; False when there is none (no display, no browser)."""
    graphical = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    if sys.platform.startswith("linux") and not graphical:
        return False
    try:
        webbrowser.get()
    except webbrowser.Error:
        return False
    return bool(webbrowser.open(path.resolve().as_uri()))
