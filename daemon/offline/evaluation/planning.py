"""The planning-framework metrics (Definitions 4.1–4.5 of the second seed paper).

Each per-task function returns ``None`` where the metric is undefined for that task
(e.g. no deviation incidents for the recovery rate); aggregates skip those tasks.
See docs/metrics.md for the choices the paper leaves open.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from webshepherd.daemon.offline.evaluation.matchers import Matcher

METRICS = (
    "step_success_rate",
    "recovery_rate",
    "repetitiveness_rate",
    "partial_success_rate",
    "element_accuracy_rate",
    "success_rate",
)


@dataclass
class AgentStep:
    executed: str | None
    planned: str | None = None


@dataclass
class AgentTrajectory:
    task_id: str
    steps: list[AgentStep] = field(default_factory=list)
    answer: str | None = None
    success: bool | None = None


@dataclass(frozen=True)
class Options:
    """``lookahead``: how many gold steps from the current one an agent step may fulfil
    (1 = only the current one); ``recovery_window``: agent steps after a deviation in
    which a match counts as a recovery (the paper's "maximum sequence length of five");
    ``repetition_on``: the agent column the repetitiveness rate reads."""

    lookahead: int = 3
    recovery_window: int = 5
    repetition_on: str = "executed"


DEFAULT_OPTIONS = Options()


def match_gold_steps(
    gold: Sequence[str], agent: Sequence[str | None], m: Matcher
) -> list[int | None]:
    """Appendix D's rule: for each gold step in order, the first still unmatched agent step
    that is equivalent (each gold step matches at most one agent step and vice versa)."""
    used: set[int] = set()
    out: list[int | None] = []
    for g in gold:
        hit = next((i for i, a in enumerate(agent) if i not in used and m.same(g, a)), None)
        if hit is not None:
            used.add(hit)
        out.append(hit)
    return out


def step_success(gold: Sequence[str], agent: Sequence[str | None], m: Matcher) -> float | None:
    """Definition 4.3: matched gold steps / gold steps."""
    if not gold:
        return None
    matched = match_gold_steps(gold, agent, m)
    return sum(1 for x in matched if x is not None) / len(gold)


@dataclass
class Recovery:
    deviations: int  # agent steps that did not fulfil the current gold step
    recoveries: int  # agent steps that got back onto the gold path after deviations
    incidents: list[tuple[int, int | None]]  # (first deviating step of a run, recovering step)

    @property
    def rate(self) -> float | None:
        return self.recoveries / self.deviations if self.deviations else None


def recovery(
    gold: Sequence[str], agent: Sequence[str | None], m: Matcher, opts: Options = DEFAULT_OPTIONS
) -> Recovery:
    """Definition 4.1, literally.

    A pointer follows the current gold step. Every agent step that does not fulfil the
    current gold step is a deviation incident. A step that fulfils a gold step in
    ``[current, current + lookahead)`` moves the pointer past it; when deviations precede it
    that are not yet recovered, it is one recovery, provided it comes within
    ``recovery_window`` agent steps of the first of them. A step that fulfils a later gold
    step than the current one both deviates (the current step was skipped) and recovers.
    Steps after every gold step is fulfilled have no current gold step and are not counted.
    """
    g = 0
    deviations = 0
    incidents: list[tuple[int, int | None]] = []
    start: int | None = None  # first deviating step not yet recovered
    for i, a in enumerate(agent):
        if g >= len(gold):
            break
        k = next(
            (k for k in range(g, min(len(gold), g + max(1, opts.lookahead))) if m.same(gold[k], a)),
            None,
        )
        if k != g:
            deviations += 1
            if start is None:
                start = i
        if k is None:
            continue
        g = k + 1
        if start is not None:
            incidents.append((start, i if i - start <= opts.recovery_window else None))
            start = None
    if start is not None:
        incidents.append((start, None))
    rec = sum(1 for _, r in incidents if r is not None)
    return Recovery(deviations, rec, incidents)


def repetitiveness(actions: Sequence[str | None], m: Matcher) -> float | None:
    """Definition 4.2: 1 − (actions identical to their predecessor) / actions."""
    if not actions:
        return None
    rep = sum(
        1
        for prev, cur in itertools.pairwise(actions)
        if prev is not None and cur is not None and m.same(prev, cur)
    )
    return 1 - rep / len(actions)


def element_accuracy(steps: Sequence[AgentStep], m: Matcher) -> float | None:
    """Definition 4.5, literally: steps whose executed action matches the planned one / all
    agent steps. A step with no stated plan (``planned`` null) does not match; neither does
    a planned step with nothing executed. ``None`` only for a task without agent steps."""
    if not steps:
        return None
    return sum(1 for s in steps if s.planned is not None and m.same(s.planned, s.executed)) / len(
        steps
    )


def partial_success(
    task: str, required: Sequence[str], answer: str | None, m: Matcher
) -> float | None:
    """Definition 4.4: met requirements / requirements, for tasks with two or more."""
    if len(required) < 2:
        return None
    if not answer:
        return 0.0
    hits = m.keywords(task, required, answer)
    return sum(1 for h in hits if h) / len(required)


def task_metrics(
    gold: Sequence[str],
    traj: AgentTrajectory,
    m: Matcher,
    *,
    intent: str = "",
    must_include: Sequence[str] = (),
    opts: Options = DEFAULT_OPTIONS,
) -> dict[str, Any]:
    executed = [s.executed for s in traj.steps]
    rec = recovery(gold, executed, m, opts) if gold else None
    column = [s.planned for s in traj.steps] if opts.repetition_on == "planned" else executed
    out: dict[str, Any] = {
        "task_id": traj.task_id,
        "gold_steps": len(gold),
        "agent_steps": len(traj.steps),
        "step_success_rate": step_success(gold, executed, m),
        "recovery_rate": rec.rate if rec else None,
        "deviations": rec.deviations if rec else None,
        "recoveries": rec.recoveries if rec else None,
        "repetitiveness_rate": repetitiveness(column, m),
        "partial_success_rate": partial_success(intent, must_include, traj.answer, m),
        "element_accuracy_rate": element_accuracy(traj.steps, m),
        "success_rate": None if traj.success is None else float(traj.success),
    }
    return out


def aggregate(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float | int | None]]:
    """Mean and (population) standard deviation of each metric over the tasks where defined."""
    out: dict[str, dict[str, float | int | None]] = {}
    for k in METRICS:
        vals = [float(r[k]) for r in rows if r.get(k) is not None]
        out[k] = {
            "mean": statistics.fmean(vals) if vals else None,
            "std": statistics.pstdev(vals) if vals else None,
            "tasks": len(vals),
        }
    return out
