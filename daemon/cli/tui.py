"""``webshepherd tui``: the Textual monitor (registered by :func:`add_tui_parser`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from webshepherd.daemon.secrets import add_token_arguments, token_from_args
from webshepherd.protocol.version import DEFAULT_URL


def cmd_tui(args: argparse.Namespace) -> int:
    try:
        from webshepherd.tui.app import WebShepherdApp
    except ImportError as exc:
        print(
            f"webshepherd: the TUI needs the 'tui' extra ({exc.name} is missing): "
            "pip install '.[tui]' in a clone of webshepherd",
            file=sys.stderr,
        )
        return 1
    token = token_from_args(args)
    if token is None:
        from webshepherd.protocol.token_store import TokenStore

        token = TokenStore().read()
        if not token:
            print(
                "webshepherd: no pairing token found: start the daemon once "
                "(`webshepherd serve` creates it), set WEBSHEPHERD_TOKEN or pass --token-file",
                file=sys.stderr,
            )
            return 1
    from webshepherd.tui.credential import read_credential

    WebShepherdApp(
        args.url,
        token,
        data_dir=args.data_dir,
        report_dir=args.report_dir,
        approver=read_credential(),  # the TUI's own, from `webshepherd pair tui`
    ).run()
    return 0


def add_tui_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Add the ``tui`` subcommand to the ``webshepherd`` parser's subparsers."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "tui", help="live monitor: sessions, reward curves, approvals, device"
    )
    p.add_argument("--url", default=DEFAULT_URL, help=f"daemon URL (default {DEFAULT_URL})")
    add_token_arguments(p)
    p.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="the daemon's recording, for the history screen's report key (default: the "
        "daemon's default)",
    )
    p.add_argument(
        "--report-dir",
        type=Path,
        default=None,
        help="where the history screen's `r` writes reports (default: the current folder)",
    )
    p.set_defaults(func=cmd_tui)
    return p
