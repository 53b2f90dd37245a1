"""What every example promises a newcomer before it runs, read from its source:

- its docstring says what happens once a person is paired (a paired TUI or extension makes
  some steps wait for them), and how it runs unattended or that nothing waits;
- an expected error (no daemon, a wrong token, a wrong URL) ends it in one line, no
  traceback: it calls ``one_line_errors()`` (tests/protocol/client/test_script.py runs it).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
PAIRED = re.compile(r"\bwith a person paired\b", re.I)
#: what the paragraph must then say: what waits, and the way to run with nothing waiting
WAITS = re.compile(r"\bwaits?\b")
UNATTENDED = re.compile(r"\bnothing (here )?waits\b|\bunattended\b", re.I)


def paragraph(doc: str) -> str | None:
    """The docstring's paragraph about a paired person, its lines joined."""
    for para in doc.split("\n\n"):
        joined = " ".join(para.split())
        if PAIRED.search(joined):
            return joined
    return None


def calls(tree: ast.Module, name: str) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
        for n in ast.walk(tree)
    )


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_docstring_says_what_waits_once_a_person_is_paired(example: Path) -> None:
    doc = ast.get_docstring(ast.parse(example.read_text("utf-8"))) or ""
    said = paragraph(doc)
    assert said is not None, f"{example.name}: no paragraph 'With a person paired …'"
    assert WAITS.search(said) and UNATTENDED.search(said), f"{example.name}: {said}"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_an_expected_error_ends_the_example_in_one_line(example: Path) -> None:
    assert calls(ast.parse(example.read_text("utf-8")), "one_line_errors"), example.name


def test_the_checks_see_a_docstring_and_a_script_without_them() -> None:
    silent = '"""Runs an agent.\n\nPrints its steps."""\nimport sys\nmain(sys.argv)\n'
    assert paragraph(ast.get_docstring(ast.parse(silent)) or "") is None
    assert not calls(ast.parse(silent), "one_line_errors")
    told = "A.\n\nWith a person paired, a low reward\nwaits for them. Unattended: nobody paired."
    assert paragraph(told) == (
        "With a person paired, a low reward waits for them. Unattended: nobody paired."
    )
