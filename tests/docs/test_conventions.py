"""What the pages promise a newcomer holds across all of them.

- **How the commands run**, said once (README.md: the venv activated, `. .venv/bin/activate`)
  and followed everywhere: no shell block of README.md or docs/*.md, and no inline command of
  theirs, of extension/README.md or of an example's docstring, runs the main venv's
  `webshepherd` or `python` as `.venv/bin/…` (another venv, such as `.venv-vllm`, is
  activated in its block).
- **The bundled extension is allowed by default**: `serve` with no flag admits its pinned id,
  and no page asks for `--allow-origin` with that id.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from markdown_it import MarkdownIt
from webshepherd.daemon.cli import build_parser
from webshepherd.daemon.cli.serve import settings_from_args
from webshepherd.daemon.extension_id import EXTENSION_ID

from tests.docs.walkthroughs import PAGES, ROOT, shell_blocks

EXTENSION_README = ROOT / "extension" / "README.md"
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
#: the sentence that says it, once
RULE = "assumes the venv that `make setup` creates is activated: `. .venv/bin/activate`"
#: a command of the main venv run by its path instead of the activated venv's name
BY_PATH = re.compile(r"(?<![\w.-])\.venv/bin/(?!activate\b)[\w.-]+")


def inline_code(text: str) -> list[str]:
    """Every inline code span of a Markdown text (as CommonMark reads it)."""
    spans = []
    for token in MarkdownIt("commonmark").parse(text):
        for child in token.children or []:
            if child.type == "code_inline":
                spans.append(child.content)
    return spans


def docstring_code(path: Path) -> list[str]:
    """The ``code`` spans and indented lines of an example's docstring."""
    doc = ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""
    return re.findall(r"``?([^`]+)``?", doc) + re.findall(r"^ {4}.*$", doc, flags=re.M)


def breaks(texts: list[str]) -> list[str]:
    return [t.strip() for t in texts if BY_PATH.search(t)]


def test_the_readme_says_once_how_the_commands_run() -> None:
    said = {page.name: " ".join(page.read_text("utf-8").split()).count(RULE) for page in PAGES}
    assert said["README.md"] == 1, said
    assert sum(said.values()) == 1, f"said on more than one page: {said}"


def test_no_shell_block_runs_the_venv_by_its_path() -> None:
    found = {b.where: hits for b in shell_blocks() if (hits := breaks(b.text.splitlines()))}
    assert not found, f"blocks that run .venv/bin/… (activate the venv instead): {found}"


def test_no_inline_command_runs_the_venv_by_its_path() -> None:
    found: dict[str, list[str]] = {}
    for page in [*PAGES, EXTENSION_README]:
        if hits := breaks(inline_code(page.read_text("utf-8"))):
            found[str(page.relative_to(ROOT))] = hits
    for example in EXAMPLES:
        if hits := breaks(docstring_code(example)):
            found[str(example.relative_to(ROOT))] = hits
    assert not found, f"commands given as .venv/bin/… (activate the venv instead): {found}"


def test_the_check_sees_a_command_by_path_and_lets_activation_pass() -> None:
    assert breaks([".venv/bin/webshepherd serve", "x=$(.venv/bin/python -c 1)"]) == [
        ".venv/bin/webshepherd serve",
        "x=$(.venv/bin/python -c 1)",
    ]
    assert breaks([". .venv/bin/activate", ". .venv-vllm/bin/activate", "webshepherd serve"]) == []
    assert inline_code("run `.venv/bin/webshepherd demo` now") == [".venv/bin/webshepherd demo"]


def test_serve_allows_the_bundled_extension_with_no_flag() -> None:
    settings = settings_from_args(build_parser().parse_args(["serve"]))
    assert settings.daemon.allowed_extension_ids == (EXTENSION_ID,)
    readme = " ".join(EXTENSION_README.read_text("utf-8").split())
    assert f"**`{EXTENSION_ID}`**" in readme and "`webshepherd serve` allows by default" in readme
    asked = [
        str(page.relative_to(ROOT))
        for page in [*PAGES, EXTENSION_README]
        if re.search(rf"--allow-origin\s+(chrome-extension://)?{EXTENSION_ID}", page.read_text())
    ]
    assert not asked, f"pages that ask for --allow-origin with the default id: {asked}"
