"""``webshepherd schema``: write (or check) the protocol's JSON Schema."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def cmd_schema(args: argparse.Namespace) -> int:
    from webshepherd.protocol.json_schema import SCHEMA_PATH, render_schema

    out = Path(args.out) if args.out else SCHEMA_PATH
    text = render_schema()
    if args.check:
        try:
            current = out.read_text(encoding="utf-8")
        except OSError:
            current = None
        if current != text:
            print(
                f"webshepherd: {out} is stale or missing: run `webshepherd schema` and commit it",
                file=sys.stderr,
            )
            return 1
        print(f"{out} is up to date")
        return 0
    if str(out) == "-":
        sys.stdout.write(text)
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
    return 0


def add_schema_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sc: argparse.ArgumentParser = sub.add_parser("schema", help="write the protocol's JSON Schema")
    sc.add_argument(
        "--out",
        default=None,
        help="output file ('-' = stdout; default protocol/schema/webshepherd-v1.schema.json)",
    )
    sc.add_argument("--check", action="store_true", help="fail when the file is not up to date")
    sc.set_defaults(func=cmd_schema)
