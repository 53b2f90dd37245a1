"""Training targets in the judge's own output format, written from ground truth.

A target never comes from the judge: its labels come from something that knows the truth (an
environment that knows each checklist item's state, a person's decision, a session's outcome;
docs/training.md gives the rule), and its feedback is a sentence written from those labels.
"""

from __future__ import annotations

from collections.abc import Sequence

from webshepherd.protocol.common import ItemLabel

LABEL_TEXT: dict[ItemLabel, str] = {"yes": "Yes", "in_progress": "In Progress", "no": "No"}
NO_EVIDENCE = "Nothing on this page shows that the action moves the task forward."


def _items(indices: Sequence[int]) -> str:
    names = [f"Checklist {i}" for i in indices]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def feedback(labels: Sequence[ItemLabel], done_before: Sequence[bool]) -> str:
    """One sentence saying which items the action completes or advances, from ``labels``
    (``done_before``: which items were already done before the action)."""
    done = [i for i, (lab, was) in enumerate(zip(labels, done_before, strict=True), 1)
            if lab == "yes" and not was]  # fmt: skip
    moving = [i for i, lab in enumerate(labels, 1) if lab == "in_progress"]
    if done and moving:
        return f"The action completes {_items(done)} and makes progress on {_items(moving)}."
    if done:
        return f"The action completes {_items(done)}."
    if moving:
        return f"The action makes progress on {_items(moving)}."
    return "The action does not move the task forward."


def judgement(labels: Sequence[ItemLabel], done_before: Sequence[bool]) -> str:
    """The whole target for one candidate: the feedback sentence, then the labels."""
    return judge_target(labels, feedback(labels, done_before))


def judge_target(labels: Sequence[ItemLabel], text: str) -> str:
    """The judgement: ``text`` (the feedback), then the ``<answer>`` block, one line per item."""
    lines = "\n".join(f"Checklist {i}: {LABEL_TEXT[lab]}" for i, lab in enumerate(labels, 1))
    return f"{text}\n\n<answer>\n{lines}\n</answer>"


def checklist_target(checklist: str, titles: Sequence[str]) -> str:
    """A checklist answer in the model's format: a one-line subgoal analysis, then
    ``[CHECKLISTS]`` and the reference checklist verbatim."""
    n = len(titles)
    analysis = f"The task takes {n} step{'s' if n != 1 else ''}, in this order."
    return f"[SUBGOAL ANALYSIS]\n{analysis}\n\n[CHECKLISTS]\n{checklist}"
