"""``webshepherd token``: print (or rotate) the pairing token."""

from __future__ import annotations

import argparse
import sys


def cmd_token(args: argparse.Namespace) -> int:
    from webshepherd.protocol.token_store import TokenStore

    store = TokenStore()
    token = store.rotate() if args.rotate else store.get_or_create()
    print(token)
    if args.rotate:
        print(
            f"webshepherd: new token stored in {store.where}; restart a running daemon and "
            "re-pair clients",
            file=sys.stderr,
        )
    return 0


def add_token_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    t: argparse.ArgumentParser = sub.add_parser(
        "token", help="print the pairing token (creates one if there is none)"
    )
    t.add_argument("--rotate", action="store_true", help="replace the token with a new one")
    t.set_defaults(func=cmd_token)
