"""What is known true about each recorded step: the one place the exports (and ``eval
recorded``) read which candidate was right, which were wrong, and who said so.

Per scored step (:class:`StepTruth`), in order of trust:

- **chosen**: a person's approval or edit, or an action a person executed (``person``); else
  the labelled candidate truth puts first (``label``, or ``replay``/``rollout`` when the labels
  came from those): it beats another labelled candidate and none beats it, in any session,
  even a failed one; else, in a session that ended in ``success``, the executed action (a tree
  search's: the sibling on the returned path) unless labels call it wrong (``outcome``).
- **rejected**: candidates a person rejected or edited away (``person``); labelled candidates
  the chosen one's labels beat, and any labelled all ``no`` (``label``); in a session that
  ended in ``failure``, the executed action of a step known at fault (``outcome``): the step
  the episode ended on (the session's last executed action: the integrations record
  ``failure`` only when the env terminated there with a reward <= 0), or a step where labels
  put another candidate first and the executed action has no label of its own.
- **unknown**: every other candidate. The judge never makes truth: only when asked
  (``include_judged``) does a clear negative of the chosen action (negatives.py) that the
  judge scored below it join the rejected, marked ``judge``.

Labels always win over rewards, the judge's and the env's: a labelled action is judged by its
labels alone. A label is one candidate's item levels (siblings.py: a person's beat the
environment's, the latest of one source wins).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from webshepherd.daemon.offline.export.negatives import is_negative
from webshepherd.daemon.offline.export.siblings import (
    LEVELS,
    TreeStep,
    beaten,
    labelled,
    tree_steps,
    truth_chosen,
)
from webshepherd.daemon.recorder.timeline import Step, Timeline
from webshepherd.protocol.common import Outcome, ScoredCandidate

#: Where a row's truth came from: a person's decision, an explicit ``label``, the env's
#: outcome, a replay or a rollout (labels recorded with those sources), or the judge (only
#: when the export is asked for judged rows).
TruthSource = Literal["person", "label", "outcome", "replay", "rollout", "judge"]


@dataclass(frozen=True)
class Truth:
    """One action known right (a step's chosen) or wrong (a rejected one), and who knew it.
    ``detail``: for ``person`` the decision (approve, edit, reject) or ``executed``; for a
    label the label's own source (environment, person, replay, rollout); for ``outcome`` the
    session's outcome; for ``judge`` the rule-based filter's name, ``negative``."""

    action: str
    thought: str
    source: TruthSource
    detail: str = ""


@dataclass
class StepTruth:
    """What is known of one scored step's candidates (the step's latest scoring of each
    action): the right one, the wrong ones (most trusted first) and those with no truth.
    ``labels``: the labelled candidates' item labels and the labels' source."""

    step: int
    chosen: Truth | None
    rejected: list[Truth]
    unknown: list[str]  # candidate actions with no truth (not chosen, not rejected)
    labels: dict[str, tuple[list[str], str]] = field(default_factory=dict)


def candidates(st: Step) -> dict[str, ScoredCandidate]:
    """The step's scored candidates by action (a re-scored action: its latest scoring)."""
    out: dict[str, ScoredCandidate] = {}
    for scoring in st.scorings:
        for c in scoring.candidates:
            out[c.candidate.action] = c
    return out


def label_source(source: str) -> TruthSource:
    """A label's truth source: its recorder's, when a replay or a rollout made it."""
    return "replay" if source == "replay" else ("rollout" if source == "rollout" else "label")


def _all_no(items: list[str]) -> bool:
    return all(LEVELS.get(x, 0) == 0 for x in items)


def step_truth(
    st: Step,
    outcome: Outcome | None,
    n_items: int,
    *,
    tree: TreeStep | None = None,
    ended_here: bool = False,
    include_judged: bool = False,
) -> StepTruth:
    """The truth of one recorded step (module docstring). ``outcome``: the session's;
    ``n_items``: its checklist's length (labels of another length are not read); ``tree``:
    the step's place in a tree search; ``ended_here``: the session's last executed action was
    run at this step; ``include_judged``: add the judge's clear negatives (source ``judge``)."""
    cands = candidates(st)
    thoughts = {a: c.candidate.thought for a, c in cands.items()}
    labels = labelled(st, [*cands, *(x.action for x in st.executed)], n_items) if n_items else {}
    executed = st.executed[-1] if st.executed else None
    chosen: Truth | None = None
    rejected: list[Truth] = []
    for a in st.person_decisions:
        held = st.decided(a)
        if held is None:
            continue
        c = held.candidate
        if a.decision == "approve":
            chosen = Truth(a.action or c.action, c.thought, "person", "approve")
        elif a.decision == "edit" and a.action:
            chosen = Truth(a.action, c.thought, "person", "edit")
            rejected.append(Truth(c.action, c.thought, "person", "edit"))
        elif a.decision == "reject":
            rejected.append(Truth(c.action, c.thought, "person", "reject"))
    human = [x for x in st.executed if x.source == "human"]
    if chosen is None and human:
        chosen = Truth(human[-1].action, human[-1].thought or "", "person", "executed")
    kept = tree.kept if tree is not None else (executed.action if executed else None)
    if chosen is None:
        top = truth_chosen(labels, kept)
        if top is not None:
            src = labels[top][1]
            chosen = Truth(top, thoughts.get(top, ""), label_source(src), src)
    if chosen is None and outcome == "success" and kept is not None:
        wrong = kept in labels and _all_no(labels[kept][0])
        if not wrong:
            thought = thoughts.get(kept)
            if thought is None and executed is not None and executed.action == kept:
                thought = executed.thought or ""
            chosen = Truth(kept, thought or "", "outcome", "success")

    right = chosen.action if chosen is not None else None
    seen = {right}
    out: list[Truth] = []

    def add(t: Truth) -> None:
        if t.action not in seen:
            seen.add(t.action)
            out.append(t)

    for t in rejected:
        add(t)
    if right is not None:
        for action, src in beaten(labels, right):
            add(Truth(action, thoughts.get(action, ""), label_source(src), src))
    for action, (items, src) in labels.items():
        if _all_no(items):
            add(Truth(action, thoughts.get(action, ""), label_source(src), src))
    # known at fault: the episode ended on it, or labels put another candidate first there
    by_labels = chosen is not None and chosen.source in ("label", "replay", "rollout")
    at_fault = ended_here or (by_labels and executed is not None and executed.action != right)
    if outcome == "failure" and at_fault and executed is not None and executed.action not in labels:
        add(Truth(executed.action, executed.thought or "", "outcome", "failure"))
    if include_judged and right is not None and right in cands:
        top_reward = cands[right].result.reward
        pool = [
            c
            for a, c in cands.items()
            if a not in seen
            and c.result.reward is not None
            and top_reward is not None
            and c.result.reward < top_reward
            and is_negative(right, a)
        ]
        pool.sort(key=lambda c: c.result.reward or 0.0)
        for sc in pool:
            add(Truth(sc.candidate.action, sc.candidate.thought, "judge", "negative"))
    unknown = [a for a in cands if a not in seen]
    return StepTruth(st.step, chosen, out, unknown, labels)


@dataclass(frozen=True)
class ProvenBadStep:
    """The first bad step replays proved (``webshepherd blame``): its executed action, which
    lost, and the proof's sentence (the label's note)."""

    step: int
    action: str
    proof: str


def proven_bad_step(tl: Timeline) -> ProvenBadStep | None:
    """The first step whose executed action a ``replay`` label calls lost (every item ``no``):
    the first bad step blame proved and recorded; None when none was."""
    for st in tl.steps:
        if not st.executed:
            continue
        executed = st.executed[-1].action
        for lab in st.labels:
            if lab.source == "replay" and lab.action == executed and _all_no(lab.items):
                return ProvenBadStep(st.step, executed, lab.note or "")
    return None


def session_truths(tl: Timeline, include_judged: bool = False) -> list[StepTruth]:
    """The truth of each scored, observed step of a recorded session, in step order."""
    n_items = len(tl.checklist.items) if tl.checklist else 0
    tree = tree_steps(tl)
    last = tl.actions[-1].step if tl.actions else None
    return [
        step_truth(
            st,
            tl.summary.outcome,
            n_items,
            tree=tree.get(st.step),
            ended_here=st.step == last,
            include_judged=include_judged,
        )
        for st in tl.steps
        if st.scorings and st.observed_at is not None
    ]
