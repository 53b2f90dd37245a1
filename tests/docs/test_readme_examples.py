"""The README's Python blocks are the example files the tests run, word for word (both ways)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKER = "# --- README ---\n"


def marked(path: Path) -> str:
    """The lines of an example between its two README markers, blank lines trimmed."""
    parts = path.read_text("utf-8").split(MARKER)
    assert len(parts) == 3, f"{path.name}: expected two '{MARKER.strip()}' lines"
    return parts[1].strip("\n")


def readme_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text("utf-8")
    return [b.strip("\n") for b in re.findall(r"```python\n(.*?)```", text, flags=re.S)]


@pytest.mark.parametrize("example", sorted((ROOT / "examples").glob("*.py")), ids=lambda p: p.name)
def test_the_readme_shows_the_example_as_run(example: Path) -> None:
    assert marked(example) in readme_blocks(), (
        f"README.md has no ```python block equal to the marked part of examples/{example.name}"
    )


def test_every_python_block_of_the_readme_is_an_example_the_tests_run() -> None:
    examples = {marked(p) for p in (ROOT / "examples").glob("*.py")}
    strays = [b.splitlines()[0] for b in readme_blocks() if b not in examples]
    assert not strays, f"README.md ```python blocks that no example file holds: {strays}"
