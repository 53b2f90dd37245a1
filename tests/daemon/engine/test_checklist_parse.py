"""Checklist parsing: the model's format and its variants, and user-given checklists."""

from __future__ import annotations

from webshepherd.daemon.engine.checklist_parse import parse_checklist, parse_reference_checklist

MODEL_OUTPUT = """[SUBGOAL ANALYSIS]
The user must search, open the product, and add it. Checklist 9: not an item here.

[CHECKLISTS]
Checklist 1: Search for shoes
- Goal: Type "shoes" into the search box.
Checklist 2: Open the product page
- Goal: Click the first result.
"""


def test_model_format_keeps_lines_and_goals() -> None:
    c = parse_checklist(MODEL_OUTPUT)
    assert [(i.index, i.title, i.goal) for i in c.items] == [
        (1, "Search for shoes", 'Type "shoes" into the search box.'),
        (2, "Open the product page", "Click the first result."),
    ]
    # the judge sees the text after [CHECKLISTS], stripped, as the authors cut it
    assert c.text == MODEL_OUTPUT.split("[CHECKLISTS]")[-1].strip()


def test_judge_text_is_verbatim_blank_lines_and_continued_goals() -> None:
    section = (
        "Checklist 1: Search\n- Goal: Type the name\n  and press Enter.\n\n"
        "Checklist 2: Buy\n- Goal: Pay."
    )
    c = parse_checklist(f"[SUBGOAL ANALYSIS]\nplan\n\n[CHECKLISTS]\n{section}\n\n")
    assert c.text == section
    assert [(i.index, i.goal) for i in c.items] == [
        (1, "Type the name and press Enter."),
        (2, "Pay."),
    ]
    ref = parse_reference_checklist(section + "\n")
    assert ref.text == section + "\n" and len(ref.items) == 2


def test_answer_block_and_no_marker_are_cut_like_the_authors() -> None:
    answer = "analysis\n<answer>\nChecklist 1: A\n- Goal: a\n</answer>\ntrailing"
    assert parse_checklist(answer).text == "Checklist 1: A\n- Goal: a"
    bare = "Checklist 1: A\n- Goal: a\n"
    assert parse_checklist(bare).text == bare


def test_variants_bold_dash_gaps_and_no_header() -> None:
    text = "Plan:\n**Checklist 1:** Search\n  - **Goal:** type it\nChecklist 3 - Buy\nnoise line\n"
    c = parse_checklist(text)
    assert [(i.index, i.title, i.goal) for i in c.items] == [
        (1, "Search", "type it"),
        (3, "Buy", None),
    ]


def test_answer_block_and_renumbering_of_repeats() -> None:
    c = parse_checklist(
        "thinking\n<answer>\nChecklist 1: A\nChecklist 1: B\n</answer>\nChecklist 7: C"
    )
    assert [(i.index, i.title) for i in c.items] == [(1, "A"), (2, "B")]


def test_nothing_parses() -> None:
    assert parse_checklist("I could not make a checklist.").items == ()


def test_reference_checklist_plain_lines() -> None:
    c = parse_reference_checklist("- Find the product\n\n2. Add it to the cart\n")
    assert [(i.index, i.title) for i in c.items] == [
        (1, "Find the product"),
        (2, "Add it to the cart"),
    ]
    assert c.text == "Checklist 1: Find the product\nChecklist 2: Add it to the cart"
    assert parse_reference_checklist("Checklist 1: X\n- Goal: y").items[0].goal == "y"
