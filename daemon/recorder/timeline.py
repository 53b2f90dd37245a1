"""A recorded session read back step by step (typed): what reports and offline tools show.
Each table's rows are read by its kind's module (``daemon/records``); this module puts them in
their steps."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any, cast

from webshepherd.daemon.records import (
    actions,
    approvals,
    events,
    labels,
    observations,
    scores,
    sessions,
    tree_nodes,
)
from webshepherd.daemon.records.actions import Executed
from webshepherd.daemon.records.approvals import Approval
from webshepherd.daemon.records.labels import TruthLabel
from webshepherd.daemon.records.scores import Scoring, read_items
from webshepherd.daemon.records.tree_nodes import RecordedTree
from webshepherd.protocol.agreement import Decided, PersonDecision
from webshepherd.protocol.common import EnvironmentInfo, ScoredCandidate, SessionSummary
from webshepherd.protocol.replies import Checklist

__all__ = [
    "Approval",
    "Executed",
    "RecordedTree",
    "Scoring",
    "Step",
    "Timeline",
    "TruthLabel",
    "read_items",
    "read_timeline",
]


@dataclass
class Step:
    step: int
    url: str = ""
    axtree: str = ""
    screenshot: bytes | None = None
    screenshot_mime: str | None = None
    observed_at: float | None = None
    boxes: dict[str, list[float]] | None = None  # bid -> [left, top, width, height], image px
    scorings: list[Scoring] = field(default_factory=list)
    approvals: list[Approval] = field(default_factory=list)
    executed: list[Executed] = field(default_factory=list)
    signals: list[dict[str, Any]] = field(default_factory=list)
    labels: list[TruthLabel] = field(default_factory=list)  # in recording order

    @property
    def scoring(self) -> Scoring | None:
        """The step's last scoring (a re-scored step shows its latest candidates)."""
        return self.scorings[-1] if self.scorings else None

    @property
    def person_decisions(self) -> list[Approval]:
        """The approvals a person decided (approve, reject, edit), in recording order."""
        return [a for a in self.approvals if a.by_person]

    def held_by(self, approval: Approval) -> Scoring | None:
        """The scoring whose candidate ``approval`` held: the last one recorded before it."""
        before = [sc for sc in self.scorings if sc.created_at <= approval.created_at]
        return before[-1] if before else self.scoring

    def decided(self, approval: Approval) -> ScoredCandidate | None:
        """The candidate ``approval`` held, as its scoring recorded it."""
        sc = self.held_by(approval)
        if sc is None:
            return None
        return next((c for c in sc.candidates if c.result.index == approval.candidate_index), None)


@dataclass
class Timeline:
    summary: SessionSummary
    checklist: Checklist | None
    answer: str | None
    model: str | None
    backend: str | None
    steps: list[Step]
    actions: list[Executed] = field(default_factory=list)  # every step's, in recording order
    # the judging settings the session was scored with (prompt style, temperature, sampling…)
    settings: dict[str, Any] = field(default_factory=dict)
    tree: RecordedTree | None = None  # a tree search's nodes (paradigm "tree"), else None
    environment: EnvironmentInfo | None = None  # what resets it (session.start's), else None

    def decisions(self) -> list[Decided]:
        """A person's decisions on held steps with what the judge said of the held candidate
        (its reward, whether it was the top pick), for ``protocol.agreement.agreement``."""
        out = []
        for st in self.steps:
            for a in st.person_decisions:
                sc = st.held_by(a)
                top = None if sc is None or sc.best is None else sc.best == a.candidate_index
                out.append(Decided(cast(PersonDecision, a.decision), a.reward, top, a.threshold))
        return out

    def executed_path(self) -> list[Executed]:
        """The actions of the executed path: for a tree search the path it returned (its
        nodes' actions and thoughts), else every action in recording order."""
        if self.tree is None or not self.tree.path:
            return self.actions
        out = []
        for nid in self.tree.path:
            n = self.tree.node(nid)
            if n is not None and n.action is not None:
                at = self.tree.updated_at[nid]
                out.append(Executed(n.action, n.thought, "agent", at, n.step or 0))
        return out


def read_timeline(
    db: sqlite3.Connection, summary: SessionSummary, checklist: Checklist | None
) -> Timeline:
    """Every step of the session (the observation seen last at a step wins), in order."""
    sid = summary.session_id
    steps: dict[int, Step] = {}

    def at(n: int) -> Step:
        return steps.setdefault(n, Step(n))

    for n, url, axtree, screenshot, mime, created_at, boxes in observations.read(db, sid):
        s = at(n)
        s.url, s.axtree, s.observed_at = url, axtree, created_at
        s.screenshot, s.screenshot_mime, s.boxes = screenshot, mime, boxes
    for n, scoring in scores.read(db, sid):
        at(n).scorings.append(scoring)
    thresholds = events.approval_thresholds(db, sid)  # as each request's event carried it
    for n, approval in approvals.read(db, sid):
        approval.threshold = thresholds.get(approval.request_id)
        at(n).approvals.append(approval)
    executed = actions.read(db, sid)
    for x in executed:
        at(x.step).executed.append(x)
    for body in events.signals(db, sid):
        at(int(body.get("step", 0))).signals.append(body)
    for n, label in labels.read(db, sid):
        at(n).labels.append(label)
    scorer = sessions.scorer(db, sid)
    return Timeline(
        summary,
        checklist,
        sessions.answer(db, sid),
        scorer.model,
        scorer.backend,
        [steps[k] for k in sorted(steps)],
        executed,
        scorer.settings,
        tree_nodes.read(db, sid),
        sessions.environment(db, sid),
    )
