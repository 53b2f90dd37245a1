"""The ``webshepherd`` command: serve, token, schema, demo, dev tiny-model.

Heavy modules (torch, transformers, the server) are imported inside the
commands that need them, so ``webshepherd token`` and ``webshepherd schema``
start fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

DEFAULT_MODEL = "WebShepherd/WebShepherd_3B"


def _err(text: str) -> None:
    print(f"webshepherd: {text}", file=sys.stderr)


# ---------------------------------------------------------------- token / schema


def cmd_token(args: argparse.Namespace) -> int:
    from webshepherd.protocol.token_store import TokenStore

    store = TokenStore()
    token = store.rotate() if args.rotate else store.get_or_create()
    print(token)
    if args.rotate:
        _err(f"new token stored in {store.where}; restart a running daemon and re-pair clients")
    return 0


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
            _err(f"{out} is stale or missing: run `webshepherd schema` and commit it")
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


# ---------------------------------------------------------------- serve


def cmd_serve(args: argparse.Namespace) -> int:
    from webshepherd.daemon.cli.serve import serve

    return serve(args)


def cmd_demo(args: argparse.Namespace) -> int:
    if args.browser:
        from webshepherd.daemon.demo.run_browser import BrowserDemoOptions, run_browser_demo

        opts = BrowserDemoOptions(
            headless=args.headless,
            out=Path(args.out) if args.out else None,
            samples=args.samples,
            max_steps=args.max_steps,
            seed=args.seed,
            policy=args.policy,
            approval_timeout_s=args.approval_timeout,
        )
        return run_browser_demo(opts, model=args.model)
    from webshepherd.daemon.demo.run import run_demo

    return run_demo(
        model=args.model,
        samples=args.samples,
        max_steps=args.max_steps,
        seed=args.seed,
        policy=args.policy,
        keep=args.keep,
        plot=not args.no_plot,
    )


def cmd_tiny_model(args: argparse.Namespace) -> int:
    from webshepherd.daemon.dev.tiny_model import build_tiny_model

    path = build_tiny_model(
        args.path, seconds=args.seconds, seed=args.seed, progress=not args.quiet
    )
    print(path)
    return 0


# ---------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="webshepherd",
        description="Live process rewards for web agents (the Web-Shepherd PRM as a local daemon).",
    )
    p.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv: debug)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    s = sub.add_parser("serve", help="run the reward daemon")
    s.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        help=f"Hugging Face id or local folder (default {DEFAULT_MODEL})",
    )
    s.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, ... (default auto)")
    from webshepherd.daemon.cli.serve import add_backend_arguments

    add_backend_arguments(s)
    s.add_argument("--host", default=None, help="bind address (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=None, help="port (default 8765; 0 = any free port)")
    s.add_argument(
        "--samples",
        type=int,
        default=None,
        help="completions per candidate when a request names none (default 5)",
    )
    s.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where the SQLite recording lives (default: $WEBSHEPHERD_DATA_DIR or the "
        "platform data dir)",
    )
    s.add_argument(
        "--allow-origin",
        dest="allow_origin",
        nargs="+",
        default=[],
        metavar="ID",
        help="Chrome extension ids allowed to connect (chrome-extension://<ID>); "
        "default: the bundled extension's pinned id",
    )
    s.add_argument("--tls-cert", type=Path, default=None, help="PEM certificate: serve wss://")
    s.add_argument("--tls-key", type=Path, default=None, help="PEM private key for --tls-cert")
    s.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --host without TLS (the token travels in clear)",
    )
    s.add_argument(
        "--approval-threshold",
        type=float,
        default=None,
        help="ask a human when the best reward is below this (default 0.3; <0 = never)",
    )
    s.add_argument(
        "--approval-timeout",
        type=float,
        default=None,
        help="seconds to wait for a human decision (default 120)",
    )
    s.add_argument(
        "--approval-default",
        choices=["reject", "approve"],
        default=None,
        help="what applies when nobody decides in time (default reject)",
    )
    s.add_argument(
        "--queue-limit", type=int, default=None, help="requests queued before 'overloaded'"
    )
    s.add_argument(
        "--batch-sessions",
        type=int,
        default=None,
        help="score requests of up to this many sessions share one model call (default 8; 1: off)",
    )
    s.add_argument(
        "--otlp-endpoint",
        default=None,
        metavar="URL",
        help="export each session as an OpenTelemetry trace over OTLP/HTTP (e.g. "
        "http://localhost:4318; needs the 'otel' extra)",
    )
    s.add_argument(
        "--otlp-header",
        action="append",
        default=[],
        metavar="K=V",
        help="a header for the collector (repeatable), e.g. an API key",
    )
    s.set_defaults(func=cmd_serve)

    t = sub.add_parser("token", help="print the pairing token (creates one if there is none)")
    t.add_argument("--rotate", action="store_true", help="replace the token with a new one")
    t.set_defaults(func=cmd_token)

    sc = sub.add_parser("schema", help="write the protocol's JSON Schema")
    sc.add_argument(
        "--out",
        default=None,
        help="output file ('-' = stdout; default protocol/schema/webshepherd-v1.schema.json)",
    )
    sc.add_argument("--check", action="store_true", help="fail when the file is not up to date")
    sc.set_defaults(func=cmd_schema)

    d = sub.add_parser("demo", help="offline demo: tiny model, bundled shop site, scripted agent")
    d.add_argument(
        "--model",
        default=None,
        help="model id or folder (default: the tiny model, built on first use)",
    )
    d.add_argument("--samples", type=int, default=2, help="completions per candidate (default 2)")
    d.add_argument("--max-steps", type=int, default=40, help="give up after this many steps")
    d.add_argument("--seed", type=int, default=0, help="seed of the agent's bad candidates")
    d.add_argument(
        "--policy",
        choices=("scripted", "reward"),
        default="scripted",
        help="run the script's good action (default), or the best-rewarded candidate "
        "(reward-guided best-of-n: meaningful with the real checkpoint)",
    )
    d.add_argument("--keep", action="store_true", help="keep the temporary data dir (recording)")
    d.add_argument("--no-plot", action="store_true", help="skip the terminal reward plot")
    d.add_argument(
        "--browser",
        action="store_true",
        help="the shop in Chromium with the extension's overlay and an approval (needs "
        "`make extension` and the chromium package)",
    )
    d.add_argument(
        "--headless",
        action="store_true",
        help="with --browser: no window; a scripted decision clicks the overlay's Reject",
    )
    d.add_argument(
        "--out",
        default=None,
        help="with --browser: folder for the screenshots and summary.json "
        "(headless default: ./webshepherd-demo)",
    )
    d.add_argument(
        "--approval-timeout",
        type=float,
        default=300.0,
        help="with --browser: seconds the held action waits for a decision, then it is "
        "rejected (default 300)",
    )
    d.set_defaults(func=cmd_demo)

    from webshepherd.daemon.cli.tui import add_tui_parser

    add_tui_parser(sub)
    from webshepherd.daemon.cli.observe import add_observe_parser

    add_observe_parser(sub)

    from webshepherd.daemon.cli.eval import add_eval_parser
    from webshepherd.daemon.cli.export import add_export_parser

    add_export_parser(sub)
    add_eval_parser(sub)
    from webshepherd.daemon.cli.report import add_report_parser

    add_report_parser(sub)
    from webshepherd.daemon.cli.prompt import add_prompt_parser

    add_prompt_parser(sub)

    dev = sub.add_parser("dev", help="developer tools")
    dsub = dev.add_subparsers(dest="dev_command", metavar="TOOL", required=True)
    tm = dsub.add_parser("tiny-model", help="build the tiny test model at PATH")
    tm.add_argument("path", type=Path)
    tm.add_argument("--seconds", type=float, default=45.0, help="CPU training time (default 45)")
    tm.add_argument("--seed", type=int, default=0)
    tm.add_argument("--quiet", action="store_true", help="no progress bar")
    tm.set_defaults(func=cmd_tiny_model)
    return p


def _setup_logging(verbosity: int) -> None:
    import logging

    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _setup_logging(args.verbose)
    from webshepherd.protocol.errors import WebShepherdError

    try:
        return int(args.func(args) or 0)
    except WebShepherdError as exc:
        _err(exc.message)
        return 2 if exc.code.value == "model_unavailable" else 1
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
