"""Targets are written in the judge's format and read back by the engine's own parsers."""

from __future__ import annotations

from webshepherd.daemon.engine.checklist_parse import parse_checklist
from webshepherd.daemon.offline.training.targets import checklist_target, feedback, judge_target


def test_feedback_names_what_the_action_completes_or_advances() -> None:
    before = (True, False, False, False)
    assert feedback(("yes", "yes", "no", "no"), before) == "The action completes Checklist 2."
    assert (
        feedback(("yes", "yes", "in_progress", "in_progress"), before)
        == "The action completes Checklist 2 and makes progress on Checklist 3 and Checklist 4."
    )
    assert feedback(("yes", "no", "no", "no"), before) == (
        "The action does not move the task forward."
    )


def test_judge_target_has_one_label_line_per_item() -> None:
    text = judge_target(("yes", "in_progress", "no"), "Fine.")
    assert text == (
        "Fine.\n\n<answer>\nChecklist 1: Yes\nChecklist 2: In Progress\nChecklist 3: No\n</answer>"
    )


def test_checklist_target_parses_back_to_the_reference() -> None:
    ref = "Checklist 1: Search\n- Goal: results shown\nChecklist 2: Buy\n- Goal: ordered"
    parsed = parse_checklist(checklist_target(ref, ["Search", "Buy"]))
    assert parsed.text == ref
    assert [it.title for it in parsed.items] == ["Search", "Buy"]
