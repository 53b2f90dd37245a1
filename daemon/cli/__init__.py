"""The ``webshepherd`` command: ``main`` and ``build_parser``; each command's module adds its
own sub-parser (serve, token, pair, schema, demo, tui, observe, export, eval, report, rescore,
train, prompt, dev). Commands of other packages (the integrations' ``blame`` and ``label``)
come from the entry point group ``webshepherd.commands`` (:data:`PLUGIN_GROUP`): the daemon
imports none of them.

Heavy modules (torch, transformers, the server) are imported inside the
commands that need them, so ``webshepherd token`` and ``webshepherd schema``
start fast.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn, cast

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

#: The entry point group of the commands other packages add: each entry a function that adds
#: its sub-parser, as this package's ``add_<name>_parser`` do (pyproject.toml).
PLUGIN_GROUP = "webshepherd.commands"
#: The commands the integrations add (named when they are not installed).
INTEGRATION_COMMANDS = ("blame", "label")
SETUP_INTEGRATIONS = (
    "`make setup-integrations` in a clone installs them in .venv-integrations; run the command "
    "with that venv activated"
)


def plugin_commands() -> list[Callable[[Any], None]]:
    """The sub-parser adders of :data:`PLUGIN_GROUP`, by name (one that fails to load is left
    out, logged: it must not take every command down)."""
    from importlib import metadata

    out = []
    for ep in sorted(metadata.entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        try:
            out.append(ep.load())
        except Exception as exc:  # a broken plugin: the other commands still run
            import logging

            logging.getLogger(__name__).warning("command %s: cannot load: %s", ep.name, exc)
    return out


#: The extra (pyproject's optional dependencies) that installs a module a command imports:
#: a base install (`pip install .` in a clone) has the SDK only.
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
    **dict.fromkeys(["gymnasium", "browsergym", "miniwob"], "integrations"),
}


def missing_extra(command: str, exc: ModuleNotFoundError) -> str | None:
    """What to install when ``command`` failed to import a module of an extra (None: not one)."""
    module = (exc.name or "").split(".")[0]
    extra = EXTRA_OF.get(module)
    if extra is None:
        return None
    return f"`webshepherd {command}` needs {module}, which the '{extra}' extra installs: " + (
        install_hint(extra)
    )


def install_hint(extra: str) -> str:
    """How to install ``extra`` today: from a clone (the package is not on PyPI yet)."""
    if extra == "integrations":
        return SETUP_INTEGRATIONS
    return (
        f"pip install '.[{extra}]' in a clone of webshepherd (everything: '.[all]'; "
        "the package is not published yet)"
    )


def _err(text: str) -> None:
    from webshepherd.protocol.terminal_text import terminal_safe

    print(f"webshepherd: {terminal_safe(text, multiline=True)}", file=sys.stderr)


def close_to(word: str, known: Iterable[str]) -> str | None:
    """The known word ``word`` was likely meant to be (difflib's closest), or None."""
    found = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return found[0] if found else None


def _did_you_mean(word: str, known: Iterable[str]) -> str:
    guess = close_to(word, known)
    return f" (did you mean {guess!r}?)" if guess else ""


class Parser(argparse.ArgumentParser):
    """argparse with "did you mean" for a mistyped command, choice or flag (every sub-parser
    is one too: argparse makes them of the parent's class), and no flag taken by a prefix of
    its name (``token --rotat`` is an error, never ``--rotate``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is not None and value not in choices and isinstance(value, str):
            if value in INTEGRATION_COMMANDS and action.dest == "command":
                raise argparse.ArgumentError(
                    action,
                    f"`webshepherd {value}` comes with the integrations, not installed here: "
                    + SETUP_INTEGRATIONS,
                )
            names = [str(c) for c in choices]
            raise argparse.ArgumentError(
                action,
                f"invalid choice: {value!r}{_did_you_mean(value, names)} "
                f"(choose from {', '.join(names)})",
            )
        super()._check_value(action, value)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            self._unrecognized(parsed, extra)
        return parsed

    def _unrecognized(self, parsed: argparse.Namespace, extra: list[str]) -> NoReturn:
        """Name the unknown arguments, each flag with the closest of the command's own."""
        parser: argparse.ArgumentParser = self
        flags: set[str] = set()
        while True:
            flags.update(parser._option_string_actions)
            sub = next(
                (a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None
            )
            chosen = getattr(parsed, sub.dest, None) if sub is not None and sub.dest else None
            if sub is None or chosen not in sub.choices:
                break
            parser = sub.choices[chosen]
        words = [
            w + _did_you_mean(w.split("=", 1)[0], flags) if w.startswith("-") else w for w in extra
        ]
        parser.error(f"unrecognized arguments: {' '.join(words)}")


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("webshepherd")
    except metadata.PackageNotFoundError:
        return "unknown (not installed: run `pip install .` in the clone)"


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="webshepherd",
        description="Live process rewards for web agents (the Web-Shepherd PRM as a local daemon).",
    )
    p.add_argument("--version", action="version", version=f"webshepherd {_version()}")
    p.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv: debug)")
    sub = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        p.add_subparsers(dest="command", metavar="COMMAND", required=True),
    )
    for add_parser in (*COMMANDS, *plugin_commands()):
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
    except WebShepherdError as exc:  # expected: its one line says what to do (-v: where, too)
        if args.verbose:
            import traceback

            traceback.print_exc()
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
