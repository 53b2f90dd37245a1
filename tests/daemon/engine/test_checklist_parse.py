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
    text = "- Find the product\n\n2. Add it to the cart\n"
    c = parse_reference_checklist(text)
    assert [(i.index, i.title) for i in c.items] == [
        (1, "Find the product"),
        (2, "Add it to the cart"),
    ]
    assert c.text == text  # verbatim, as the authors pass the dataset's gt_checklist
    assert parse_reference_checklist("Checklist 1: X\n- Goal: y").items[0].goal == "y"


def test_reference_checklists_reach_the_judge_verbatim_whatever_their_form() -> None:
    """The authors put ``gt_checklist`` into the prompt as it is: no ``Checklist N:`` rewrite
    of a numbered list or of other labels (``Subgoal 1:``)."""
    for text in (
        "1. Search for shoes\n2. Buy them",
        "Subgoal 1: Search\nSubgoal 2: Buy",
        "* Search\n* Buy\n",
        "Checklist 1: Search\n\nChecklist 2: Buy",
    ):
        c = parse_reference_checklist(text)
        assert c.text == text and len(c.items) == 2, text
    sub = parse_reference_checklist("Subgoal 1: Search\nSubgoal 2: Buy")
    assert [i.title for i in sub.items] == ["Subgoal 1: Search", "Subgoal 2: Buy"]


def test_generated_checklist_as_a_numbered_or_bulleted_list() -> None:
    """A model that writes its checklist as a list is parsed (the authors judge with its raw
    text; items are needed here to name the judge's labels)."""
    numbered = (
        "[SUBGOAL ANALYSIS]\nSearch, then buy.\n\n[CHECKLISTS]\n"
        "1. **Search** for shoes\n   - Goal: Type the name.\n2) Buy them\n   - pay"
    )
    c = parse_checklist(numbered)
    assert c.text == numbered.split("[CHECKLISTS]")[-1].strip()
    assert [(i.index, i.title, i.goal) for i in c.items] == [
        (1, "Search for shoes", "Type the name."),
        (2, "Buy them", "pay"),
    ]
    bullets = parse_checklist("<answer>\n- Search for shoes\n- Buy them\n</answer>")
    assert [(i.index, i.title) for i in bullets.items] == [(1, "Search for shoes"), (2, "Buy them")]
    assert bullets.text == "- Search for shoes\n- Buy them"
    # a paragraph alone is no checklist
    assert parse_checklist("[CHECKLISTS]\nSearch and then buy.").items == ()


def test_numbering_gaps_keep_the_models_numbers() -> None:
    gaps = parse_checklist("[CHECKLISTS]\n1. Search\n3. Buy")
    assert [i.index for i in gaps.items] == [1, 3]
    lines = parse_checklist("[CHECKLISTS]\nChecklist 1: Search\nChecklist 3: Buy")
    assert [i.index for i in lines.items] == [1, 3]
