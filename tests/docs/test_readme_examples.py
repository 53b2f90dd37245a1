"""The Python blocks of README.md and docs/*.md are the example files the tests run, word for
word, both ways: every example is shown on some page, and every block shown is an example.

This rule is why the Python blocks need no block runner (pytest-markdown-docs, Sybil): each
block is an example file, and tests/examples runs every example as a person does, a
subprocess against a real daemon, with its output checked; a runner would execute the same
code a second time, in-process and without a daemon."""

from __future__ import annotations

from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
MARKER = "# --- README ---\n"  # the lines between two of these are what a page shows
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def marked(path: Path) -> str:
    """The lines of an example between its two markers, blank lines trimmed."""
    parts = path.read_text("utf-8").split(MARKER)
    assert len(parts) == 3, f"{path.name}: expected two '{MARKER.strip()}' lines"
    return parts[1].strip("\n")


def python_blocks(text: str) -> list[str]:
    """The ```python fences of a page, read as CommonMark reads them (as the docs harness
    does: walkthroughs.py)."""
    tokens = MarkdownIt("commonmark").parse(text)
    fences = [t for t in tokens if t.type == "fence" and t.info.strip() == "python"]
    return [t.content.strip("\n") for t in fences]


def shown() -> dict[str, list[str]]:
    """Each ```python block of the pages, with the pages (relative paths) that show it."""
    blocks: dict[str, list[str]] = {}
    for page in PAGES:
        for block in python_blocks(page.read_text("utf-8")):
            blocks.setdefault(block, []).append(str(page.relative_to(ROOT)))
    return blocks


def strays(blocks: dict[str, list[str]], examples: set[str]) -> list[str]:
    """`page: first line` of every block that no example file holds."""
    return [f"{pages[0]}: {b.splitlines()[0]}" for b, pages in blocks.items() if b not in examples]


EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_a_page_shows_the_example_as_run(example: Path) -> None:
    assert marked(example) in shown(), (
        f"no ```python block of README.md or docs/*.md equals the marked part of "
        f"examples/{example.name}"
    )


def test_every_python_block_of_the_pages_is_an_example_the_tests_run() -> None:
    found = strays(shown(), {marked(p) for p in EXAMPLES})
    assert not found, f"```python blocks that no example file holds: {found}"


def test_a_block_that_drifts_from_its_example_is_caught() -> None:
    example = marked(ROOT / "examples" / "sdk_async.py")
    drifted = example.replace("asyncio.run(main())", "asyncio.run(main())  # edited")
    assert drifted != example
    page = f"text\n\n```python\n{drifted}\n```\n"
    assert strays({b: ["page.md"] for b in python_blocks(page)}, {example}) == [
        "page.md: import asyncio"
    ]
