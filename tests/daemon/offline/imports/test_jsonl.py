"""The JSONL run format: a task line, then steps; bad lines are errors naming the line."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from webshepherd.daemon.offline.imports import ImportFormatError, load_run


def write(path: Path, *rows: object) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows))
    return path


def test_a_run_reads_its_task_and_steps(tmp_path: Path) -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
    run = load_run(
        write(
            tmp_path / "run.jsonl",
            {"intent": "Find a cable", "checklist": "Checklist 1: Search", "extra": 1},
            {
                "url": "http://a/",
                "axtree": "[1] searchbox ''",
                "thought": "t",
                "action": "click('1')",
            },
            "",
            {"url": "http://a/2", "screenshot": png, "action": "scroll(0, 200)"},
        )
    )
    assert (run.kind, run.intent, run.start_url, run.checklist) == (
        "jsonl",
        "Find a cable",
        "http://a/",  # the first step's URL when the task line has none
        "Checklist 1: Search",
    )
    first, second = run.steps
    assert (first.axtree, first.thought, first.action) == ("[1] searchbox ''", "t", "click('1')")
    assert second.axtree is None and second.screenshot == b"\x89PNG\r\n\x1a\nfake"


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (['{"intent": "x"}', "{not json"], "run.jsonl:2: not JSON"),
        ([{"start_url": "http://a/"}], "run.jsonl:1: intent: Field required"),
        ([{"intent": "x"}, {"url": "http://a/"}], "run.jsonl:2: action: Field required"),
        ([], "empty"),
    ],
)
def test_bad_lines_are_named(tmp_path: Path, rows: list[object], message: str) -> None:
    with pytest.raises(ImportFormatError, match=message):
        load_run(write(tmp_path / "run.jsonl", *rows))


def test_what_is_not_a_run_says_so(tmp_path: Path) -> None:
    with pytest.raises(ImportFormatError, match="no such file"):
        load_run(tmp_path / "missing.jsonl")
    with pytest.raises(ImportFormatError, match="not a browser-use history"):
        load_run(write(tmp_path / "other.json", {"rows": []}))
    with pytest.raises(ImportFormatError, match=r"neither step_<n>\.pkl\.gz"):
        load_run(tmp_path)


@pytest.mark.parametrize(
    ("shot", "why"),
    [
        ("%%", "run.jsonl:2: not base64"),
        ("<base64 PNG>", "run.jsonl:2: not base64"),
        (base64.b64encode(b"GIF89a").decode(), "run.jsonl:2: not an image"),
    ],
)
def test_a_bad_screenshot_is_left_out_with_a_warning(tmp_path: Path, shot: str, why: str) -> None:
    """docs/rescore.md's field table: the step is kept, from its page text, without the image."""
    step = {"url": "http://a/", "axtree": "[1] link 'x'", "action": "click('1')"}
    run = load_run(write(tmp_path / "run.jsonl", {"intent": "x"}, {**step, "screenshot": shot}))
    [kept] = run.steps
    assert (kept.screenshot, kept.axtree, kept.action) == (None, "[1] link 'x'", "click('1')")
    [warning] = run.warnings
    assert warning.startswith("screenshot left out: ") and why in warning
