"""``webshepherd pair``: a person pairs their own tool (the extension, the TUI) to decide
approvals; ``--list`` and ``--revoke ID`` manage the paired tools.

A code is made only at a terminal (stdin a TTY): an agent that runs commands without one
gets none. ``pair extension`` prints a one-time code for the extension's options page;
``pair tui`` pairs the TUI at once (it connects to the daemon, sends the code and keeps the
credential in the TUI's own file). The daemon side: daemon/server/approvers.py.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from webshepherd.daemon.secrets import add_token_arguments, token_from_args
from webshepherd.daemon.server.approvers import ApproverRole
from webshepherd.protocol.version import DEFAULT_URL

#: ``pair`` names the tools; the daemon knows their roles
ROLES: dict[str, ApproverRole] = {"extension": "extension", "tui": "monitor"}


def _err(text: str) -> int:
    print(f"webshepherd: {text}", file=sys.stderr)
    return 1


def _not_a_terminal(what: str) -> int:
    return _err(
        f"pair: {what} only at a terminal (stdin is not a TTY): pairing gives a tool the power "
        "to decide approvals, so a person runs `webshepherd pair` themselves, never an agent "
        "or a script"
    )


def cmd_pair(args: argparse.Namespace) -> int:
    from webshepherd.daemon.server.approvers import Approvers
    from webshepherd.protocol.token_store import default_config_dir

    approvers = Approvers(default_config_dir())
    if args.list:
        paired = approvers.paired()
        if not paired:
            print("no tool is paired (`webshepherd pair extension` or `webshepherd pair tui`)")
        for a in paired:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(a.created_at))
            print(f"{a.id}  {a.role:<9}  {a.name}  (paired {when})")
        return 0
    if args.revoke is not None:
        if not sys.stdin.isatty():
            return _not_a_terminal("--revoke works")
        gone = approvers.revoke(args.revoke)
        if gone is None:
            return _err(f"pair --revoke: no paired tool {args.revoke!r} (see `pair --list`)")
        print(f"revoked {gone.id} ({gone.label}); it decides nothing from now on")
        return 0
    if args.tool is None:
        return _err("pair: name the tool: `webshepherd pair extension` or `webshepherd pair tui`")
    if not sys.stdin.isatty():
        return _not_a_terminal("a pairing code is made")
    name = args.name if args.name is not None else ("tui" if args.tool == "tui" else None)
    if name is not None:
        from pydantic import ValidationError
        from webshepherd.protocol.requests import Pair

        try:
            Pair(id="n", code="0", name=name)
        except ValidationError:
            return _err(
                f"pair --name {name!r}: 1-64 letters, digits, spaces, '.', '_' or '-', "
                "starting with a letter or digit"
            )
    pending = approvers.create_code(ROLES[args.tool], name)
    minutes = (pending.expires_at - time.time()) / 60
    if args.tool == "extension":
        print(f"Pairing code: {pending.code}")
        print(
            f"Valid once, for {minutes:.0f} minutes. Open the webshepherd extension's options "
            "page (right-click its icon, Options), enter the code under 'Pair as a "
            "person' and press Pair. Only then does that browser's side panel and popup "
            "decide approvals."
        )
        return 0
    return _pair_tui(args, pending.code, name or "tui")


def _pair_tui(args: argparse.Namespace, code: str, name: str) -> int:
    """Send the code from this terminal and keep the credential for the TUI."""
    from webshepherd.protocol.client import AsyncClient
    from webshepherd.protocol.errors import WebShepherdError
    from webshepherd.tui.credential import write_credential

    async def exchange() -> str:
        client = AsyncClient(
            args.url, token_from_args(args), name=name, role="monitor", reconnect=False
        )
        async with client:
            return (await client.pair(code, name)).credential

    try:
        credential = asyncio.run(exchange())
    except WebShepherdError as exc:
        return _err(f"pair tui: {exc.message}")
    path = write_credential(credential)
    print(
        f"Paired the TUI as monitor:{name}; its credential is in {path} (owner-only). "
        "`webshepherd tui` now decides approvals; `webshepherd pair --list` shows the paired "
        "tools, `--revoke ID` unpairs one."
    )
    return 0


def add_pair_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "pair",
        help="pair your extension or TUI to decide approvals (a person's command, at a terminal)",
        description="Pair a person's tool with the daemon: only paired tools decide approvals "
        "or label as a person; the agent's token never can.",
    )
    p.add_argument("tool", nargs="?", choices=sorted(ROLES), help="the tool to pair")
    p.add_argument("--name", default=None, help="what decisions by this tool are recorded as")
    p.add_argument("--list", action="store_true", help="list the paired tools")
    p.add_argument("--revoke", metavar="ID", default=None, help="unpair a tool (see --list)")
    p.add_argument(
        "--url",
        default=None,
        help=f"the daemon (pair tui; default $WEBSHEPHERD_URL, else {DEFAULT_URL})",
    )
    add_token_arguments(p)
    p.set_defaults(func=cmd_pair)
