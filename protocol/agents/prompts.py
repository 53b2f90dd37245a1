"""The policy's prompts: proposal, refinement (Web-Shepherd, Figure 23) and the general plan.

``REFINE_TEMPLATE`` is the paper's Figure 23 as printed, with two documented fixes: the
figure's ``<EXAMPLE_PLACEHOLDER>`` line is dropped (the concrete example it stands for is
the response printed right after it), and the example action ``click(’117’)`` keeps
the straight quotes an action needs (typesetting turned them into ’).
``[Description of Action space]`` is :data:`~.action_space.ACTION_SPACE`. The paper does
not print its proposal prompt; :data:`PROPOSE_TEMPLATE` is Figure 23 without the draft and
its feedback (and with the general plan for ``plan`` agents). :data:`PLAN_SYSTEM` is the
planning-framework paper's Appendix B.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from webshepherd.protocol.agents.action_space import ACTION_SPACE
from webshepherd.protocol.common import Turn

REFINE_TEMPLATE = """# Instructions
You are given a draft thought and action for the current step. This draft has not been executed yet.
It was evaluated by a reward model using a checklist based on the task goals.
Your task is to reflect on the checklist-based feedback and improve the proposed action.
Based on the page state and the provided feedback, revise the thought if needed and produce a better action that will be executed.
Your answer will be interpreted and executed by a program, so be precise and follow the formatting instructions.

# Goal:
{intent}

# Current State
## Current URL:
{current_url}

## AXTree:
Note: [bid] is the unique alpha-numeric identifier at the beginning of lines for each element in the AXTree. Always use bid to refer to elements in your actions.
Note: only elements that are visible in the viewport are presented. You might need to scroll the page, or open tabs or menus to see more.
Note: You can only interact with visible elements. If the "visible" tag is not present, the element is not visible on the page.
{text_observation}

# History of interaction with the task:
{trajectory}

# Action space:
{action_space}

# Draft Thought and Action:
Thought: {thought}
Action: {action}

# Reward Model Feedback:
The reward model evaluates actions using a checklist derived from task-specific goals. Each checklist item represents a key subgoal or intermediate step.

Feedback:
<feedback>
{feedback}
</feedback>

# Concrete Examples
Here is a concrete example of how to format your answer.
Make sure to follow the template with proper tags:

# Your Response:
<think>
To move toward Checklist 1—accessing the **Showerthoughts** forum—I should first make it easier to locate that forum in the long list. Clicking the **“Alphabetical”** link will reorder all forums alphabetically, so I can then quickly scroll to “Showerthoughts” and open it. This directly progresses us to the first checklist item.
</think>
<action>
click('117')
</action>"""  # noqa: E501

_HEAD, _REST = REFINE_TEMPLATE.split("# Draft Thought and Action:\n", 1)
_EXAMPLE = _REST[_REST.index("# Concrete Examples\n") :]

PROPOSE_TEMPLATE = (
    _HEAD.replace(
        "You are given a draft thought and action for the current step. This draft has not "
        "been executed yet.\nIt was evaluated by a reward model using a checklist based on "
        "the task goals.\nYour task is to reflect on the checklist-based feedback and improve "
        "the proposed action.\nBased on the page state and the provided feedback, revise the "
        "thought if needed and produce a better action that will be executed.\n",
        "Review the current state of the page and all other information to find the best "
        "possible next action to accomplish your goal.\n",
    )
    .replace("{text_observation}\n\n", "{text_observation}\n{last_action_error}\n")
    .replace("# Action space:\n", "{plan}# Action space:\n")
    + _EXAMPLE
)

PLAN_SYSTEM = (
    "You are an intelligent agent that solves tasks on the web. Your job now is to create a "
    "GENERAL PLAN before taking any actions. Here’s the information you’ll have: (1) The "
    "user’s objective: This is the task you’re trying to complete. (2) The current web "
    "page’s accessibility tree: This is a simplified representation of the webpage, "
    "providing key information. (3) The current web page’s URL: This is the page you’re "
    "currently navigating.\n\n"
    "Guidelines for the general plan: (1) Include short reasoning for each step. (2) Indicate "
    "the type of action you would take (click, type, scroll, etc.). (3) Consider the page "
    "structure. Some tasks may require context about the current page. (4) Write the plan as "
    "a numbered sequence.\n\n"
    "Return ONLY the general plan."
)
PLAN_USER = "OBSERVATION:\n{text_observation}\nURL: {current_url}\nOBJECTIVE: {intent}"

_FIELD = re.compile(r"\{([a-z_]+)\}")


def render(template: str, values: Mapping[str, str]) -> str:
    """Fill ``{name}`` fields in one pass (values may hold braces; unknown names stay)."""
    return _FIELD.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def format_history(history: Sequence[Turn]) -> str:
    """``THOUGHT i:`` / ``ACTION i:`` lines (the reward model's format), or ``None``."""
    if not history:
        return "None"
    out = []
    for i, t in enumerate(history, start=1):
        out.append(f"THOUGHT {i}: {t.thought}\nACTION {i}: {t.action}")
        if t.error:
            out.append(f"ERROR {i}: {t.error}")
    return "\n".join(out)


def format_plan(plan: Sequence[str] | None) -> str:
    """The ``# General Plan:`` section of the proposal prompt (empty without a plan)."""
    if not plan:
        return ""
    steps = "\n".join(f"{i}. {s}" for i, s in enumerate(plan, start=1))
    return f"# General Plan:\n{steps}\n\n"


def refine_prompt(
    intent: str,
    current_url: str,
    text_observation: str,
    history: Sequence[Turn],
    thought: str,
    action: str,
    feedback: str,
    action_space: str = ACTION_SPACE,
) -> str:
    """Figure 23 rendered for one draft and its feedback."""
    return render(
        REFINE_TEMPLATE,
        {
            "intent": intent,
            "current_url": current_url,
            "text_observation": text_observation,
            "trajectory": format_history(history),
            "action_space": action_space,
            "thought": thought,
            "action": action,
            "feedback": feedback,
        },
    )


def propose_prompt(
    intent: str,
    current_url: str,
    text_observation: str,
    history: Sequence[Turn],
    plan: Sequence[str] | None = None,
    last_action_error: str | None = None,
    action_space: str = ACTION_SPACE,
) -> str:
    """The proposal prompt for one step (with the general plan for ``plan`` agents)."""
    error = f"\n## Error from the last action:\n{last_action_error}\n" if last_action_error else ""
    return render(
        PROPOSE_TEMPLATE,
        {
            "intent": intent,
            "current_url": current_url,
            "text_observation": text_observation,
            "last_action_error": error,
            "trajectory": format_history(history),
            "plan": format_plan(plan),
            "action_space": action_space,
        },
    )


def plan_messages(intent: str, current_url: str, text_observation: str) -> list[dict[str, str]]:
    """The chat that asks for a general plan (planning-framework paper, Appendix B)."""
    user = render(
        PLAN_USER,
        {"intent": intent, "current_url": current_url, "text_observation": text_observation},
    )
    return [{"role": "system", "content": PLAN_SYSTEM}, {"role": "user", "content": user}]
