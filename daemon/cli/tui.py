"""``webshepherd tui``: the Textual monitor (registered by :func:`add_tui_parser`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from webshepherd.daemon.secrets import add_token_arguments, token_from_args
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.version import DEFAULT_URL, URL_ENV, daemon_url

if TYPE_CHECKING:
    from webshepherd.tui.app import WebShepherdApp


def cmd_tui(args: argparse.Namespace) -> int:
    try:
        app = tui_app(args)
    except ImportError as exc:
        print(
            f"webshepherd: the TUI needs the 'tui' extra ({exc.name} is missing): "
            "pip install '.[tui]' in a clone of webshepherd",
            file=sys.stderr,
        )
        return 1
    app.run()
    return 0


def tui_app(args: argparse.Namespace) -> WebShepherdApp:
    """The monitor as ``webshepherd tui`` starts it: the daemon at --url, else
    $WEBSHEPHERD_URL, else the default; the TUI's approver credential, read again while it
    runs (a `webshepherd pair tui` is taken up at once)."""
    from webshepherd.tui.app import WebShepherdApp
    from webshepherd.tui.credential import read_credential

    token = token_from_args(args)
    if token is None:
        from webshepherd.protocol.token_store import TokenStore

        token = TokenStore().read()
        if not token:
            raise WebShepherdError(
                "no pairing token found: start the daemon once (`webshepherd serve` creates "
                "it), set WEBSHEPHERD_TOKEN or pass --token-file"
            )
    return WebShepherdApp(
        daemon_url(args.url),
        token,
        data_dir=args.data_dir,
        report_dir=args.report_dir,
        approver=read_credential(),  # the TUI's own, from `webshepherd pair tui`
        credential=read_credential,
    )


def add_tui_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Add the ``tui`` subcommand to the ``webshepherd`` parser's subparsers."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "tui", help="live monitor: sessions, reward curves, approvals, device"
    )
    p.add_argument(
        "--url", default=None, help=f"daemon URL (default ${URL_ENV}, else {DEFAULT_URL})"
    )
    add_token_arguments(p)
    p.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="the daemon's recording, for the history screen's report key, `w` (default: the "
        "daemon's default)",
    )
    p.add_argument(
        "--report-dir",
        type=Path,
        default=None,
        help="where the history screen's `w` writes reports (default: the current folder)",
    )
    p.set_defaults(func=cmd_tui)
    return p
