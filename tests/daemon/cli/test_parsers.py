"""No flag is ever taken by a prefix of its name (argparse's default, ``allow_abbrev``):
``webshepherd token --rotat`` must be an error, not ``--rotate``. Every sub-parser of
``webshepherd`` is walked, and every other argparse parser in the project (examples, bench,
dev tools) is read from its source."""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from webshepherd.daemon.cli import build_parser

ROOT = Path(__file__).resolve().parents[3]
SOURCES = ("protocol", "daemon", "tui", "integrations", "examples", "bench")


def parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``parser`` and every sub-parser under it, each with its command line."""
    yield " ".join(("webshepherd", *path)), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, (*path, name))


ALL = list(parsers(build_parser()))


def test_the_walk_reaches_nested_commands() -> None:
    names = {name for name, _ in ALL}
    assert {"webshepherd token", "webshepherd pair", "webshepherd eval", "webshepherd dev"} <= names
    assert any(name.count(" ") >= 2 for name in names), "no sub-sub-command reached"


@pytest.mark.parametrize(("name", "parser"), ALL, ids=[name for name, _ in ALL])
def test_no_flag_of_a_command_is_taken_by_its_prefix(
    name: str, parser: argparse.ArgumentParser
) -> None:
    assert parser.allow_abbrev is False, f"{name}: allow_abbrev"
    for flag, action in parser._option_string_actions.items():
        short = flag[:-1]
        if not flag.startswith("--") or len(short) < 3 or short in parser._option_string_actions:
            continue
        found = parser._parse_optional(short)  # what argparse makes of the word on a command line
        if isinstance(found, list):  # newer Pythons: a list of (action, flag, ...) tuples
            found = found[0] if found else None
        taken = found[0] if isinstance(found, tuple) else None
        assert taken is not action, f"{name}: {short!r} is taken as {flag!r}"


def test_token_rotat_is_an_error_and_rotates_nothing(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "WEBSHEPHERD_CONFIG_DIR": str(tmp_path / "config"),
        "WEBSHEPHERD_KEYRING": "0",
    }
    env.pop("WEBSHEPHERD_TOKEN", None)
    cli = [sys.executable, "-m", "webshepherd.daemon.cli", "token"]
    first = subprocess.run(cli, env=env, capture_output=True, text=True, check=True, timeout=60)
    typo = subprocess.run([*cli, "--rotat"], env=env, capture_output=True, text=True, timeout=60)
    assert typo.returncode == 2
    assert "unrecognized arguments: --rotat (did you mean '--rotate'?)" in typo.stderr
    again = subprocess.run(cli, env=env, capture_output=True, text=True, check=True, timeout=60)
    assert again.stdout == first.stdout, "the token was rotated"


def argparse_calls() -> list[tuple[str, ast.Call]]:
    """Every ``ArgumentParser(...)`` call in the project's sources, with where it is."""
    found = []
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text("utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call):
                    func = node.func
                    called = func.attr if isinstance(func, ast.Attribute) else None
                    called = func.id if isinstance(func, ast.Name) else called
                    if called == "ArgumentParser":
                        found.append((f"{path.relative_to(ROOT)}:{node.lineno}", node))
    return found


def refuses_prefixes(call: ast.Call) -> bool:
    return any(
        k.arg == "allow_abbrev" and isinstance(k.value, ast.Constant) and k.value.value is False
        for k in call.keywords
    )


def test_every_argparse_parser_of_the_project_refuses_prefixes() -> None:
    calls = argparse_calls()
    assert any(where.startswith("examples/") for where, _ in calls), "the walk found no example"
    loose = [where for where, call in calls if not refuses_prefixes(call)]
    assert not loose, f"ArgumentParser(...) without allow_abbrev=False: {loose}"


def test_the_source_check_sees_a_parser_that_takes_prefixes() -> None:
    ok, loose = (
        ast.parse(src).body[0].value  # type: ignore[attr-defined]
        for src in (
            "p = argparse.ArgumentParser(description='x', allow_abbrev=False)",
            "p = argparse.ArgumentParser(description='x')",
        )
    )
    assert refuses_prefixes(ok) and not refuses_prefixes(loose)
