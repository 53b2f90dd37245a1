"""Recorded sessions as TRL datasets: stepwise supervision for process reward models
(``trl-prm``) and conversational preference pairs for the agent's policy (``trl-preference``).

Both use the steps the WebPRM export trusts (webprm.py: a person's approval or edit, a
person's own action, the sibling ground truth puts first at a tree search's step, or the
executed action of a session that ended in success) and its rejected candidates
(human-rejected ones, siblings truth puts below the chosen one, then clear negatives by the
rule-based filter). A run of steps (``trl-prm``) follows the trajectory: consecutive steps,
or at a tree search's step the child the chosen action reached.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from webshepherd.daemon.engine.prompts import format_trajectory
from webshepherd.daemon.engine.types import Turn
from webshepherd.daemon.offline.export.sessions import Summary
from webshepherd.daemon.offline.export.webprm import StepRecord, _trusted_steps, pick_rejected
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


def _step_text(red: Redactor, rec: StepRecord, turn: dict[str, str]) -> str:
    """One step as a PRM completion: where it happened, the thought, the action."""
    return (
        f"URL: {red.text(rec.url)}\nThought: {red.text(turn.get('thought') or '')}\n"
        f"Action: {red.action(turn['action'], rec.axtree)}"
    )


def trl_prm_rows(
    history: History,
    sessions: Sequence[SessionSummary],
    redact: Sequence[str] = (),
    history_steps: int = 10,
    progress: Callable[[int], None] | None = None,
    summary: Summary | None = None,
) -> Iterator[dict[str, Any]]:
    """TRL's stepwise-supervision rows ``{prompt, completions, labels}``, PRM800K-style: a run
    of consecutive trusted steps gives one all-True row (its chosen steps), and each rejected
    candidate at step k of the run a row with the run's chosen steps before k (True) and the
    rejected one (False). ``prompt``: the task, its checklist and the actions before the run."""
    summ = summary if summary is not None else Summary()
    run: list[tuple[SessionSummary, Redactor, StepRecord, dict[str, str]]] = []

    def flush() -> Iterator[dict[str, Any]]:
        if not run:
            return
        s, red, first, _ = run[0]
        sid = s.session_id
        prompt = _task(red, s, first.checklist_text)
        before = _history(red, first.history, history_steps)
        if before:
            prompt += f"\nPrevious actions:\n{before}"
        chosen = [_step_text(red, rec, c) for _, _, rec, c in run]
        meta = {"task_id": sid, "first_step": first.step}
        yield {"prompt": prompt, "completions": chosen, "labels": [True] * len(chosen), **meta}
        wrote = 1
        for k, (_, _, rec, _) in enumerate(run):
            for r in pick_rejected(rec):
                yield {
                    "prompt": prompt,
                    "completions": [*chosen[:k], _step_text(red, rec, r)],
                    "labels": [True] * k + [False],
                    **meta,
                }
                wrote += 1
        summ.rows += wrote
        summ.per_session[sid] += wrote
        run.clear()

    for item in _trusted_steps(history, sessions, redact, progress, summ):
        s, _, rec, _ = item
        if run and (run[-1][0].session_id != s.session_id or not _follows(run[-1][2], rec)):
            yield from flush()
        run.append(item)
    yield from flush()


def _follows(prev: StepRecord, rec: StepRecord) -> bool:
    """``rec`` is the step after ``prev`` on one trajectory: in a tree search, the step that
    expanded the node ``prev``'s chosen action reached; else the next step."""
    if prev.node is None and rec.node is None:
        return prev.step + 1 == rec.step
    reached = prev.children.get(prev.chosen["action"]) if prev.chosen else None
    return reached is not None and reached == rec.node


def trl_preference_rows(
    history: History,
    sessions: Sequence[SessionSummary],
    redact: Sequence[str] = (),
    history_steps: int = 10,
    progress: Callable[[int], None] | None = None,
    summary: Summary | None = None,
) -> Iterator[dict[str, Any]]:
    """TRL's conversational preference rows ``{prompt, chosen, rejected}``: the prompt a
    system and a user message (task, previous actions, URL, AX tree), chosen and rejected
    one assistant message each (``Thought: …`` / ``Action: …``); one row per rejected
    candidate of a trusted step. Beside them: ``chosen_reward`` and ``rejected_reward``, the
    judge's rewards of the two (null when not scored; they did not make the pair), and
    ``rejected_by``: ``person``, ``environment`` (ground truth, a tree search's siblings) or
    ``negative`` (the rule-based filter)."""
    summ = summary if summary is not None else Summary()
    for s, red, rec, chosen in _trusted_steps(history, sessions, redact, progress, summ):
        sid = s.session_id
        rejected = pick_rejected(rec)
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

        def reply(turn: dict[str, str], rec: StepRecord = rec, red: Redactor = red) -> list:
            text = (
                f"Thought: {red.text(turn.get('thought') or '')}\n"
                f"Action: {red.action(turn['action'], rec.axtree)}"
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
                "chosen_reward": rewards.get(chosen["action"]),
                "rejected_reward": rewards.get(r["action"]),
                "rejected_by": r["why"],
            }
            summ.rows += 1
            summ.per_session[sid] += 1
