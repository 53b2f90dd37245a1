"""Engine types <-> protocol models."""

from __future__ import annotations

from webshepherd.daemon.engine import types as et
from webshepherd.protocol import common as pc
from webshepherd.protocol.replies import Checklist


def checklist_event(
    session_id: str, parsed: et.ParsedChecklist, source: pc.ChecklistSource
) -> Checklist:
    items = [pc.ChecklistItem(index=i.index, title=i.title, goal=i.goal) for i in parsed.items]
    return Checklist(session_id=session_id, source=source, items=items, text=parsed.text)


def parsed_checklist(event: Checklist) -> et.ParsedChecklist:
    items = tuple(et.ChecklistItem(index=i.index, title=i.title, goal=i.goal) for i in event.items)
    return et.ParsedChecklist(items=items, text=event.text)


def _clip(p: float) -> float:
    return min(1.0, max(0.0, p))


def item_probs(items: tuple[et.ItemScore, ...]) -> list[pc.ItemProbs]:
    return [
        pc.ItemProbs(
            index=max(1, i.index),
            yes=_clip(i.probs.yes),
            in_progress=_clip(i.probs.in_progress),
            no=_clip(i.probs.no),
        )
        for i in items
    ]


def candidate_result(c: et.CandidateScore) -> pc.CandidateResult:
    return pc.CandidateResult(
        index=c.index,
        reward=c.reward,
        items=item_probs(c.items),
        feedback=c.feedback,
        samples=[
            pc.SampleResult(
                reward=s.reward, text=s.text, items=item_probs(s.items), unparsed=s.unparsed
            )
            for s in c.samples
        ],
        parsed_samples=c.parsed_samples,
        probabilities=c.label_source,
        unparsed_samples=c.unparsed_samples,
        judge_inputs=c.judge_inputs,
    )


def best_index(results: list[pc.CandidateResult]) -> int | None:
    """Highest reward; ties go to the earlier candidate; None when no reward at all."""
    best: int | None = None
    best_reward = float("-inf")
    for r in results:
        if r.reward is not None and r.reward > best_reward:
            best, best_reward = r.index, r.reward
    return best
