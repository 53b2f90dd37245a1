"""The ``webshepherd`` commands the integrations add: ``blame`` and ``label rollouts``.

The daemon's command line imports no integration: it finds these through the package's entry
point group ``webshepherd.commands`` (pyproject.toml), each entry a function that adds its
sub-parser. This module imports nothing heavy; the command's own module (BrowserGym, through
:mod:`~webshepherd.integrations.replay`) is imported when the command runs, so a venv without
the integrations lists them and says, in one line, what installs them.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_blame_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "blame",
        help="prove a recorded BrowserGym run's first bad step by replaying it "
        "(the integrations' venv: make setup-integrations)",
    )
    blame_arguments(p)
    p.set_defaults(func=_run_blame)


def blame_arguments(p: argparse.ArgumentParser) -> None:
    """``blame``'s arguments (``webshepherd blame`` and ``python -m ...blame``)."""
    p.add_argument("session", help="the recorded session's id")
    p.add_argument("--agent", required=True, help="MODULE:FACTORY making a fresh agent")
    p.add_argument("--json", type=Path, default=None, help="write the result here")
    _common(p)
    p.add_argument("--budget", type=int, default=None, help="replays per candidate rank")
    p.add_argument(
        "--no-record",
        action="store_true",
        help="do not record a proven step into the session (labels with source replay)",
    )


def add_label_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "label",
        help="label a recorded run's candidates by replaying it (the integrations' venv: "
        "make setup-integrations)",
    )
    kinds = p.add_subparsers(dest="label_kind", metavar="KIND", required=True)
    r = kinds.add_parser(
        "rollouts",
        help="each recorded candidate's share of N rollouts that won, as labels with "
        "source rollout",
    )
    rollouts_arguments(r)
    r.set_defaults(func=_run_rollouts)


def rollouts_arguments(p: argparse.ArgumentParser) -> None:
    """``label rollouts``' arguments."""
    p.add_argument("session", help="the recorded session's id")
    p.add_argument("--agent", required=True, help="MODULE:FACTORY making a fresh agent")
    p.add_argument(
        "--rollouts", type=int, default=4, metavar="N", help="replays per candidate (default 4)"
    )
    p.add_argument("--json", type=Path, default=None, help="write the values here")
    _common(p)
    p.add_argument("--no-record", action="store_true", help="print the values, record no label")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", type=Path, default=None, help="the daemon's data folder")
    p.add_argument(
        "--sandbox", action="append", default=[], help="an origin whose writes may leave"
    )
    p.add_argument(
        "--url",
        default=None,
        help="the daemon that records the labels (default $WEBSHEPHERD_URL, else the local one)",
    )


def _run_blame(args: argparse.Namespace) -> int:
    from webshepherd.integrations.blame import run

    return run(args)


def _run_rollouts(args: argparse.Namespace) -> int:
    from webshepherd.integrations.rollouts import run

    return run(args)
