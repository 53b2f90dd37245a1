"""The ``webshepherd`` command: ``main`` and ``build_parser``; each command's module adds its
own sub-parser (serve, token, pair, schema, demo, tui, observe, export, eval, report, rescore,
train, prompt, dev).

Heavy modules (torch, transformers, the server) are imported inside the
commands that need them, so ``webshepherd token`` and ``webshepherd schema``
start fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from webshepherd.daemon.cli.demo import add_demo_parser
from webshepherd.daemon.cli.dev import add_dev_parser
from webshepherd.daemon.cli.eval import add_eval_parser
from webshepherd.daemon.cli.export import add_export_parser
from webshepherd.daemon.cli.observe import add_observe_parser
from webshepherd.daemon.cli.pair import add_pair_parser
from webshepherd.daemon.cli.prompt import add_prompt_parser
from webshepherd.daemon.cli.report import add_report_parser
from webshepherd.daemon.cli.rescore import add_rescore_parser
from webshepherd.daemon.cli.schema import add_schema_parser
from webshepherd.daemon.cli.serve import add_serve_parser
from webshepherd.daemon.cli.token import add_token_parser
from webshepherd.daemon.cli.train import add_train_parser
from webshepherd.daemon.cli.tui import add_tui_parser

# in the order ``webshepherd --help`` lists them
COMMANDS = (
    add_serve_parser,
    add_token_parser,
    add_pair_parser,
    add_schema_parser,
    add_demo_parser,
    add_tui_parser,
    add_observe_parser,
    add_export_parser,
    add_eval_parser,
    add_report_parser,
    add_rescore_parser,
    add_train_parser,
    add_prompt_parser,
    add_dev_parser,
)


#: The extra (pyproject's optional dependencies) that installs a module a command imports:
#: a base install (`pip install webshepherd`) has the SDK only.
EXTRA_OF = {
    **dict.fromkeys(
        ["torch", "transformers", "safetensors", "tokenizers", "keyring", "plotext", "rich"],
        "daemon",
    ),
    **dict.fromkeys(["textual", "psutil"], "tui"),
    **dict.fromkeys(["vllm", "pynvml"], "gpu"),
    **dict.fromkeys(
        ["pyarrow", "datasets", "PIL", "sentence_transformers", "tqdm", "openpyxl", "trl"], "eval"
    ),
    "opentelemetry": "otel",
    "playwright": "dev",
}


def missing_extra(command: str, exc: ModuleNotFoundError) -> str | None:
    """What to install when ``command`` failed to import a module of an extra (None: not one)."""
    module = (exc.name or "").split(".")[0]
    extra = EXTRA_OF.get(module)
    if extra is None:
        return None
    return (
        f"`webshepherd {command}` needs {module}, which the '{extra}' extra installs: "
        f"pip install 'webshepherd[{extra}]' (everything: 'webshepherd[all]')"
    )


def _err(text: str) -> None:
    from webshepherd.protocol.terminal_text import terminal_safe

    print(f"webshepherd: {terminal_safe(text, multiline=True)}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="webshepherd",
        description="Live process rewards for web agents (the Web-Shepherd PRM as a local daemon).",
    )
    p.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv: debug)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add_parser in COMMANDS:
        add_parser(sub)
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
    except ModuleNotFoundError as exc:
        hint = missing_extra(args.command, exc)
        if hint is None:
            raise
        _err(hint)
        return 1
