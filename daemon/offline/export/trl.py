"""Recorded sessions as TRL datasets: stepwise supervision for process reward models
(``trl-prm``) and conversational preference pairs for the agent's policy (``trl-preference``).

Both read each step's truth as the WebPRM export does (truth.py through webprm.py): the
chosen action and the rejected ones known from a person, labels or the env's outcome (the
judge's clear negatives only when asked, marked ``judge``); every row says where its truth
came from. A run of steps (``trl-prm``) follows the trajectory: consecutive steps, or at a
tree search's step the child the chosen action reached.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from webshepherd.daemon.engine.prompts import format_trajectory
from webshepherd.daemon.engine.types import Turn
from webshepherd.daemon.offline.export.sessions import Summary
from webshepherd.daemon.offline.export.truth import Truth
from webshepherd.daemon.offline.export.webprm import StepRecord, step_records, trusted_steps
from webshepherd.daemon.recorder import History
from webshepherd.daemon.redact import Redactor, mask_password_lines
from webshepherd.protocol.common import SessionSummary

POLICY_SYSTEM = (
    "You are a web agent. Given the task, the actions taken so far and the current page's "
    "accessibility tree, give your next step as a thought and one action."
)


def _task(red: Redactor, s: SessionSummary, checklist: str) -> str:
    lines = [f"Task: {red.text(s.intent)}"]
    if s.start_url:
        lines.append(f"Start URL: {red.text(s.start_url)}")
    if checklist:
        lines.append(f"Checklist:\n{red.text(checklist)}")
    return "\n".join(lines)


def _history(red: Redactor, history: Sequence[Turn], last: int) -> str:
    turns = [Turn(red.text(t.thought), red.action(t.action, "")) for t in history]
    return format_trajectory(turns, last).strip()


def _step_text(red: Redactor, rec: StepRecord, turn: Truth) -> str:
    """One step as a PRM completion: where it happened, the thought, the action."""
    return (
        f"URL: {red.text(rec.url)}\nThought: {red.text(turn.thought)}\n"
        f"Action: {red.action(turn.action, rec.axtree)}"
    )


def trl_prm_rows(
    history: History,
    sessions: Sequence[SessionSummary],
    redact: Sequence[str] = (),
    history_steps: int = 10,
    progress: Callable[[int], None] | None = None,
    summary: Summary | None = None,
    include_judged: bool = False,
    generated_checklists: bool = False,
) -> Iterator[dict[str, Any]]:
    """TRL's stepwise-supervision rows ``{prompt, completions, labels}``, PRM800K-style: a run
    of consecutive steps with a chosen action gives one all-True row (its chosen steps), and
    each rejected candidate at step k of the run a row with the run's chosen steps before k
    (True) and the rejected one (False); a step with rejected candidates and no chosen one
    gives a row of each alone (False). ``prompt``: the task, its own checklist (a generated
    one only with ``generated_checklists``) and the actions before the row's first step.
    ``sources``: where each label's truth came from; ``checklist_source``: the prompt's."""
    summ = summary if summary is not None else Summary()
    run: list[tuple[SessionSummary, Redactor, StepRecord]] = []

    def prompt_of(s: SessionSummary, red: Redactor, first: StepRecord) -> str:
        prompt = _task(red, s, first.checklist_text)
        before = _history(red, first.history, history_steps)
        return prompt + f"\nPrevious actions:\n{before}" if before else prompt

    def row(
        s: SessionSummary, first: StepRecord, prompt: str, steps: Sequence[tuple[str, bool, str]]
    ) -> dict[str, Any]:
        summ.rows += 1
        summ.per_session[s.session_id] += 1
        return {
            "prompt": prompt,
            "completions": [text for text, _, _ in steps],
            "labels": [ok for _, ok, _ in steps],
            "task_id": s.session_id,
            "first_step": first.step,
            "sources": [src for _, _, src in steps],
            "checklist_source": first.checklist_source,
        }

    def flush() -> Iterator[dict[str, Any]]:
        if not run:
            return
        s, red, first = run[0]
        prompt = prompt_of(s, red, first)
        chosen = [
            (_step_text(red, rec, rec.chosen), True, rec.chosen.source)
            for _, _, rec in run
            if rec.chosen is not None
        ]
        yield row(s, first, prompt, chosen)
        for k, (_, _, rec) in enumerate(run):
            for r in rec.rejected:
                yield row(
                    s, first, prompt, [*chosen[:k], (_step_text(red, rec, r), False, r.source)]
                )
        run.clear()

    steps = step_records(
        history, sessions, redact, progress, summ, include_judged, generated_checklists
    )
    for s, red, rec in steps:
        if rec.chosen is None:  # no run goes through it (a run continues past it)
            if not rec.rejected:
                summ.skipped["no_trustworthy_chosen"] += 1
            prompt = prompt_of(s, red, rec)
            for r in rec.rejected:
                yield row(s, rec, prompt, [(_step_text(red, rec, r), False, r.source)])
            continue
        if run and (run[-1][0].session_id != s.session_id or not _follows(run[-1][2], rec)):
            yield from flush()
        run.append((s, red, rec))
    yield from flush()


def _follows(prev: StepRecord, rec: StepRecord) -> bool:
    """``rec`` is the step after ``prev`` on one trajectory: in a tree search, the step that
    expanded the node ``prev``'s chosen action reached; else the next step."""
    if prev.node is None and rec.node is None:
        return prev.step + 1 == rec.step
    reached = prev.children.get(prev.chosen.action) if prev.chosen else None
    return reached is not None and reached == rec.node


def trl_preference_rows(
    history: History,
    sessions: Sequence[SessionSummary],
    redact: Sequence[str] = (),
    history_steps: int = 10,
    progress: Callable[[int], None] | None = None,
    summary: Summary | None = None,
    include_judged: bool = False,
    generated_checklists: bool = False,
) -> Iterator[dict[str, Any]]:
    """TRL's conversational preference rows ``{prompt, chosen, rejected}``: the prompt a
    system and a user message (task, previous actions, URL, AX tree), chosen and rejected
    one assistant message each (``Thought: …`` / ``Action: …``); one row per rejected
    candidate known from truth (``include_judged``: the judge's clear negatives too). Beside
    them: ``chosen_source`` and ``rejected_source``, where each side's truth came from
    (truth.TruthSource), and ``chosen_reward`` and ``rejected_reward``, the judge's rewards
    of the two (null when not scored; they make no pair unless the source says ``judge``).
    The prompt holds no checklist (``generated_checklists`` is accepted, and changes
    nothing)."""
    summ = summary if summary is not None else Summary()
    steps = trusted_steps(history, sessions, redact, progress, summ, include_judged)
    for s, red, rec, chosen in steps:
        sid = s.session_id
        rejected = rec.rejected
        if not rejected:
            summ.skipped["no_rejected"] += 1
            continue
        user = _task(red, s, "")
        before = _history(red, rec.history, history_steps)
        user += f"\nPrevious actions:\n{before or '(none)'}"
        user += f"\nCurrent URL: {red.text(rec.url)}"
        user += f"\nAccessibility tree:\n{red.text(mask_password_lines(rec.axtree))}"
        prompt = [
            {"role": "system", "content": POLICY_SYSTEM},
            {"role": "user", "content": user},
        ]

        def reply(turn: Truth, rec: StepRecord = rec, red: Redactor = red) -> list:
            text = (
                f"Thought: {red.text(turn.thought)}\nAction: {red.action(turn.action, rec.axtree)}"
            )
            return [{"role": "assistant", "content": text}]

        rewards = {c.candidate.action: c.result.reward for c in rec.candidates}
        for r in rejected:
            yield {
                "prompt": prompt,
                "chosen": reply(chosen),
                "rejected": reply(r),
                "task_id": sid,
                "step_id": rec.step,
                "chosen_reward": rewards.get(chosen.action),
                "rejected_reward": rewards.get(r.action),
                "chosen_source": chosen.source,
                "rejected_source": r.source,
            }
            summ.rows += 1
            summ.per_session[sid] += 1
