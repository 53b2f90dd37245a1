"""Secrets for the commands (tokens, OTLP headers) from the environment or a file, never from
the process arguments (every user of the machine reads those in ``ps``).

A flag that used to take a secret on the command line is kept only to refuse it with where the
secret goes instead.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from urllib.parse import unquote

from webshepherd.protocol.errors import WebShepherdError

#: The OpenTelemetry convention: ``key=value`` pairs separated by commas.
OTLP_HEADERS_ENV = "OTEL_EXPORTER_OTLP_HEADERS"


class _Refused(argparse.Action):
    """An old flag that took a secret in argv: refused with where the secret goes now."""

    def __init__(self, option_strings: list[str], dest: str, *, where: str, **kw: object):
        self.where = where
        super().__init__(option_strings, dest, nargs=1, help=argparse.SUPPRESS)

    def __call__(self, parser: argparse.ArgumentParser, *a: object, **kw: object) -> None:
        flag = "/".join(self.option_strings)
        parser.exit(
            2,
            f"webshepherd: {flag} would put a secret in the process arguments, where every "
            f"user of this machine can read it; {self.where}\n",
        )


def refuse_flag(p: argparse.ArgumentParser, flag: str, where: str) -> None:
    """Add ``flag``, an old way to pass a secret in argv, refused with ``where`` it goes now."""
    p.add_argument(flag, action=_Refused, where=where)


def add_token_arguments(p: argparse.ArgumentParser, what: str = "the daemon's") -> None:
    """``--token-file`` (and a refused ``--token``)."""
    p.add_argument(
        "--token-file",
        type=Path,
        default=None,
        metavar="FILE",
        help=f"a file holding {what} pairing token (default: $WEBSHEPHERD_TOKEN, else the "
        "local store, as `webshepherd token` prints)",
    )
    refuse_flag(p, "--token", "set WEBSHEPHERD_TOKEN or pass --token-file FILE instead")


def token_from_args(args: argparse.Namespace) -> str | None:
    """The token of ``--token-file``, else None (the client then reads $WEBSHEPHERD_TOKEN or
    the local store)."""
    path: Path | None = getattr(args, "token_file", None)
    if path is None:
        return None
    token = read_secret_file(path, "--token-file")
    if not token:
        raise WebShepherdError(f"--token-file {path}: the file is empty")
    return token


def read_secret_file(path: Path, flag: str) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise WebShepherdError(f"{flag} {path}: cannot read it ({exc.strerror})") from None


def add_otlp_header_arguments(p: argparse.ArgumentParser) -> None:
    """``--otlp-headers-file`` (and a refused ``--otlp-header``)."""
    p.add_argument(
        "--otlp-headers-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="headers for the collector, one KEY=VALUE a line (e.g. an API key); default: "
        f"${OTLP_HEADERS_ENV} (KEY=VALUE,KEY2=VALUE2)",
    )
    p.add_argument(
        "--otlp-header",
        action=_Refused,
        where=f"set {OTLP_HEADERS_ENV}=KEY=VALUE,... or pass --otlp-headers-file FILE "
        "(one KEY=VALUE a line) instead",
    )


def otlp_headers(args: argparse.Namespace) -> list[str]:
    """``KEY=VALUE`` strings from ``--otlp-headers-file``, else ``$OTEL_EXPORTER_OTLP_HEADERS``."""
    path: Path | None = getattr(args, "otlp_headers_file", None)
    if path is not None:
        text = read_secret_file(path, "--otlp-headers-file")
        return [line.strip() for line in text.splitlines() if line.strip()]
    env = os.environ.get(OTLP_HEADERS_ENV, "")
    return [unquote(pair.strip()) for pair in env.split(",") if pair.strip()]  # %-encoded
