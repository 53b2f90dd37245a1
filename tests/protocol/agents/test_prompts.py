"""The policy prompts: the paper's refinement prompt byte for byte, proposal and plan prompts."""

from __future__ import annotations

from pathlib import Path

from webshepherd.protocol.agents.action_space import ACTION_SPACE
from webshepherd.protocol.agents.prompts import (
    PLAN_SYSTEM,
    Turn,
    format_history,
    plan_messages,
    propose_prompt,
    refine_prompt,
)

# Figure 23 of the Web-Shepherd paper as extracted from the paper's text (box title included).
PAPER = (Path(__file__).parent / "figure23_paper.txt").read_text(encoding="utf-8")

FIELDS = {
    "intent": "Buy the cheapest {USB-C} cable",
    "current_url": "http://shop.test/search?q=usb-c",
    "text_observation": "RootWebArea 'Shop'\n\t[12] searchbox 'Search' {value}",
    "thought": "Open the deals page.",
    "action": "click('40')",
    "feedback": "The agent opened deals, not the search.\n\nChecklist 1: No\nChecklist 2: No",
}
HISTORY = [Turn("The search box is [12].", "fill('12', 'usb-c')", None)]


def expected_from_paper() -> str:
    """The paper's figure with exactly the substitutions prompts.py documents."""
    text = PAPER.removeprefix("Prompts ").rstrip("\n")
    text = text.replace("<EXAMPLE_PLACEHOLDER>\n", "")  # the example printed right after it
    text = text.replace("click(\u2019117\u2019)", "click('117')")  # typeset quotes
    text = text.replace("[Description of Action space]", ACTION_SPACE)
    for name in ("trajectory",):
        text = text.replace("{" + name + "}", format_history(HISTORY))
    for name, value in FIELDS.items():
        text = text.replace("{" + name + "}", value)
    return text


def test_refinement_prompt_is_the_papers_figure_23() -> None:
    got = refine_prompt(
        FIELDS["intent"],
        FIELDS["current_url"],
        FIELDS["text_observation"],
        HISTORY,
        FIELDS["thought"],
        FIELDS["action"],
        FIELDS["feedback"],
    )
    assert got == expected_from_paper()
    assert got.startswith("# Instructions\nYou are given a draft thought and action")
    assert "Checklist 1\u2014accessing the **Showerthoughts** forum" in got  # typography kept
    assert "<EXAMPLE_PLACEHOLDER>" not in got and "[Description of Action space]" not in got
    # Values holding braces are not re-expanded.
    assert "Buy the cheapest {USB-C} cable" in got and "{value}" in got


def test_the_action_space_is_browsergyms_for_the_harness_actions() -> None:
    names = [
        "send_msg_to_user", "report_infeasible", "scroll", "fill", "select_option", "click",
        "hover", "keyboard_press", "goto", "go_back", "go_forward",
    ]  # fmt: skip
    assert ACTION_SPACE.startswith(f"{len(names)} different types of actions are available.")
    for name in names:
        assert f"\n{name}(" in ACTION_SPACE
    assert (
        "    Description: Click an element.\n    Examples:\n        click('a51')\n" in ACTION_SPACE
    )


def test_history_uses_the_reward_models_format() -> None:
    assert format_history([]) == "None"
    text = format_history([Turn("a", "click('1')"), Turn("b", "click('2')", "no element")])
    assert (
        text == "THOUGHT 1: a\nACTION 1: click('1')\n"
        "THOUGHT 2: b\nACTION 2: click('2')\nERROR 2: no element"
    )


def test_proposal_prompt_carries_plan_and_last_error_only_when_there_are_some() -> None:
    plain = propose_prompt("Buy", "http://x/", "tree", [])
    assert "# General Plan:" not in plain and "Error from the last action" not in plain
    assert "# Draft Thought and Action:" not in plain and "<feedback>" not in plain
    assert "# Goal:\nBuy\n\n# Current State\n## Current URL:\nhttp://x/\n" in plain
    assert "# Action space:\n" + ACTION_SPACE + "\n\n# Concrete Examples\n" in plain
    with_plan = propose_prompt(
        "Buy", "http://x/", "tree", [], plan=["Search", "Open"], last_action_error="no bid 9"
    )
    assert "# General Plan:\n1. Search\n2. Open\n\n# Action space:" in with_plan
    assert "tree\n\n## Error from the last action:\nno bid 9\n\n# History" in with_plan


def test_plan_prompt_is_the_planning_papers_appendix_b() -> None:
    system, user = plan_messages("Buy a cable", "http://x/", "tree")
    assert system == {"role": "system", "content": PLAN_SYSTEM}
    assert PLAN_SYSTEM.startswith(
        "You are an intelligent agent that solves tasks on the web. Your job now is to create "
        "a GENERAL PLAN before taking any actions."
    )
    assert PLAN_SYSTEM.endswith(
        "(4) Write the plan as a numbered sequence.\n\nReturn ONLY the general plan."
    )
    assert user == {
        "role": "user",
        "content": "OBSERVATION:\ntree\nURL: http://x/\nOBJECTIVE: Buy a cable",
    }
