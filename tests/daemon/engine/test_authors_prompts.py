"""The judge and checklist prompts equal, byte for byte, what the authors' released pipeline
sends for the same row (expected messages produced by running their code; see the fixture
README): history format, verbatim checklist, braces and typographic quotes everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from webshepherd.daemon.engine.prompts import (
    PROMPT_STYLES,
    PromptStyle,
    checklist_messages,
    image_content,
    step_judge_messages,
)
from webshepherd.daemon.offline.evaluation.rewardbench import parse_row, step_input

from tests.fixtures.data import WEBPRM_ROWS

ROWS = sorted(WEBPRM_ROWS.glob("*.row.json"))


def _load(path: Path) -> tuple[dict, dict]:
    row = json.loads(path.read_text("utf-8"))
    expected = json.loads(path.with_name(path.name.replace(".row", ".expected")).read_text("utf-8"))
    return row, expected


@pytest.mark.parametrize("path", ROWS, ids=lambda p: p.name.split(".")[0])
def test_judge_messages_equal_the_authors(path: Path) -> None:
    row, expected = _load(path)
    step = step_input(parse_row(path, 1, row))
    keys = ["chosen", *(f"rejected:{k}" for k in range(len(row["rejected"])))]
    assert len(keys) == len(step.candidates)
    for k, key in enumerate(keys):
        assert step_judge_messages(step, k, history_steps=10) == expected[key], key


@pytest.mark.parametrize("path", ROWS, ids=lambda p: p.name.split(".")[0])
def test_checklist_messages_equal_the_authors(path: Path) -> None:
    row, expected = _load(path)
    got = checklist_messages(row["intent"], row["start_url"], row["text_observation"])
    assert got == expected["checklist"]


def test_the_fixtures_cover_what_they_claim() -> None:
    long_row, expected = _load(WEBPRM_ROWS / "long-history.row.json")
    user = expected["chosen"][1]["content"]
    # step 12 with 12 past steps: the last ten, numbered by their real index
    assert "## Trajectory\nThought 3: Step 2 thought" in user
    assert "Action 12: click('111')" in user and "Thought 2:" not in user
    # a goal continued on a second line and the blank lines between items reach the judge
    assert "\n  and submit it, so the results page lists ‘Red Runner’.\n\nChecklist 2:" in user
    for field in ("intent", "current_url", "text_observation", "checklist"):
        assert "{" in long_row[field] and ("“" in long_row[field] or "‘" in long_row[field])
    first = _load(WEBPRM_ROWS / "first-step.row.json")[1]["chosen"][1]["content"]
    assert "## Trajectory\n## Current State" in first


def test_a_null_thought_renders_as_the_authors_render_it() -> None:
    """``thought: null`` is "None" in the authors' prompts (``str.format`` of None), in the
    candidate's response and in the history; a numbered reference checklist goes in verbatim."""
    user = _load(WEBPRM_ROWS / "null-thought.row.json")[1]["chosen"][1]["content"]
    assert "THOUGHT: None\nACTION: click('31')" in user
    assert "Thought 1: None\nAction 1: click('7')" in user
    assert "## Checklist\n1. Open the loans page\n- Goal:" in user


def _baselines(path: Path) -> dict:
    return json.loads(path.with_name(path.name.replace(".row", ".baselines.expected")).read_text())


@pytest.mark.parametrize("style", ["baseline", "baseline-likert"])
@pytest.mark.parametrize("path", ROWS, ids=lambda p: p.name.split(".")[0])
def test_baseline_prompts_equal_the_authors(path: Path, style: PromptStyle) -> None:
    """``baseline``: the authors' ``with_checklist`` judge and ``default`` checklist prompts;
    ``baseline-likert``: their ``likert_scale`` judge prompt (expected messages from their code,
    prompt types as ``evaluate_webprm.sh`` names them)."""
    row = json.loads(path.read_text("utf-8"))
    expected = _baselines(path)[style]
    step = step_input(parse_row(path, 1, row))
    keys = ["chosen", *(f"rejected:{k}" for k in range(len(row["rejected"])))]
    for k, key in enumerate(keys):
        got = step_judge_messages(step, k, history_steps=10, style=style)
        assert got == expected[key], key
    got = checklist_messages(row["intent"], row["start_url"], row["text_observation"], style)
    assert got == expected["checklist"]
    assert expected["chosen"][0]["content"].startswith("You are an expert evaluator")
    assert expected["chosen"][1]["content"].startswith("# Action space:\n")


@pytest.mark.parametrize("style", PROMPT_STYLES)
def test_the_screenshot_goes_where_the_authors_put_it_in_every_style(style: PromptStyle) -> None:
    """The authors' multimodal messages (``text_image``): the user text split around the
    screenshot after the AX tree, in each prompt style."""
    path = WEBPRM_ROWS / "first-step.row.json"
    row = json.loads(path.read_text("utf-8"))
    expected = _baselines(path)[style]["chosen+image"]
    url = expected[1]["content"][1]["image_url"]["url"]
    step = step_input(parse_row(path, 1, row))
    got = step_judge_messages(step, 0, history_steps=10, with_image=True, style=style)
    assert got[0] == expected[0]
    assert image_content(got[1]["content"], url) == expected[1]["content"]
