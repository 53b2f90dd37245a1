"""The monitor's per-session views (sans-I/O): what :class:`~webshepherd.tui.state.MonitorState`
folds daemon events into, and the widgets read: a session's steps, signals and decided paused
requests, a pending approval, a held step and a person's decision on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from webshepherd.protocol.agreement import PersonDecision
from webshepherd.protocol.common import (
    ApprovalCard,
    CommitMode,
    DecisionInfo,
    GuardHit,
    HeldRequest,
    ItemLabel,
    ScoredCandidate,
    TreeNodeFields,
)
from webshepherd.protocol.progress import FirstBadSteps, StepJudgement, first_bad_steps, item_levels
from webshepherd.protocol.steps import step_count, step_label

LABEL_MARK: dict[str, str] = {"yes": "✓", "in_progress": "~", "no": "✗"}


@dataclass
class StepView:
    step: int
    url: str | None = None
    # the scored event's candidates and results (the samples left out: the monitor shows none)
    candidates: list[ScoredCandidate] = field(default_factory=list)
    best: int | None = None
    chosen: int | None = None
    decision: str | None = None
    decision_action: str | None = None
    decided: DecisionInfo | None = None  # the scored event's decision whole (who, why, way out)
    executed: str | None = None
    executed_source: str | None = None

    @property
    def best_reward(self) -> float | None:
        return self.candidates[self.best].result.reward if self.best is not None else None

    @property
    def executed_reward(self) -> float | None:
        """The reward of the candidate that was really executed (or chosen, before the action)."""
        if self.executed is not None:
            for c in self.candidates:
                if c.candidate.action == self.executed:
                    return c.result.reward
            return None
        if self.chosen is not None and self.chosen < len(self.candidates):
            return self.candidates[self.chosen].result.reward
        return None

    @property
    def judged(self) -> ScoredCandidate | None:
        """The executed (else chosen, else best) candidate."""
        ref = self.chosen if self.chosen is not None else self.best
        if self.executed is not None:
            ref = next(
                (c.result.index for c in self.candidates if c.candidate.action == self.executed),
                ref,
            )
        if ref is None or ref >= len(self.candidates):
            return None
        return self.candidates[ref]

    @property
    def items(self) -> dict[int, ItemLabel]:
        """Checklist labels of the executed (else chosen, else best) candidate."""
        judged = self.judged
        return {i.index: i.likeliest for i in judged.result.items} if judged is not None else {}


@dataclass
class Signal:
    step: int | None
    kind: str
    message: str


@dataclass
class CommitView:
    """A paused request's answer (``commit.decided``): approved (by a person, or let go),
    ran unheld and flagged (watch mode, a sandbox origin), or refused; ``at`` is when this
    monitor received it (the wire carries no time), None when read back from history."""

    request: HeldRequest
    decision: DecisionInfo
    flagged: bool
    at: float | None = None

    @property
    def outcome(self) -> Literal["approved", "flagged", "refused"]:
        """How it ended, as "Requests decided" tells them apart (the extension's
        ``decidedOutcome``)."""
        if self.flagged:
            return "flagged"
        return "approved" if self.decision.status in ("approved", "edited", "auto") else "refused"


@dataclass
class SessionView:
    session_id: str
    intent: str = ""
    agent: str = "?"
    start_url: str | None = None
    created_at: float | None = None
    order: int = 0
    state: str = "running"
    outcome: str | None = None
    checklist: list[tuple[int, str]] = field(default_factory=list)
    steps: dict[int, StepView] = field(default_factory=dict)
    signals: list[Signal] = field(default_factory=list)
    progress_request: str | None = None
    progress: dict[tuple[int, int], str] = field(default_factory=dict)
    last_url: str | None = None
    tree: dict[int, TreeNodeFields] = field(default_factory=dict)  # nodes, latest update
    tree_trying: int | None = None  # the node the search is trying now
    tree_event: tuple[int, str] | None = None  # the latest update: (node, event)
    tree_path: list[int] = field(default_factory=list)  # the path the search returned
    mode: CommitMode | None = None  # what its commits get (ask, watch, stop); None: not said
    commits: list[CommitView] = field(default_factory=list)  # paused requests decided, in order
    holding: dict[str, tuple[int, float | None]] = field(default_factory=dict)  # held steps
    version: int = 0  # grows with every change
    steps_version: int = 0  # grows when the checklist or a step changes (not on progress text)

    def touch_steps(self) -> None:
        self.version += 1
        self.steps_version += 1

    def step(self, n: int) -> StepView:
        s = self.steps.get(n)
        if s is None:
            s = self.steps[n] = StepView(n)
        return s

    @property
    def scored_steps(self) -> list[StepView]:
        return [self.steps[k] for k in sorted(self.steps) if self.steps[k].candidates]

    @property
    def current(self) -> StepView | None:
        """The newest step that has candidates."""
        for k in sorted(self.steps, reverse=True):
            if self.steps[k].candidates:
                return self.steps[k]
        return None

    @property
    def held(self) -> tuple[int, float | None] | None:
        """The newest step waiting for a person: its index and the held candidate's reward."""
        return max(self.holding.values(), key=lambda h: h[0]) if self.holding else None

    @property
    def step_count(self) -> int:
        """How many steps the session has (protocol/steps.py: scored or acted at), a step
        held for a person included (its ``scored`` comes after the decision)."""
        return step_count(
            [
                *(k for k, s in self.steps.items() if s.candidates),
                *(h for h, _ in self.holding.values()),
            ],
            (k for k, s in self.steps.items() if s.executed is not None),
        )

    @property
    def latest_reward(self) -> float | None:
        """The held step's reward while one waits, else the newest scored step's (executed,
        else best)."""
        held = self.held
        cur = self.current
        if held is not None and held[1] is not None and (cur is None or held[0] >= cur.step):
            return held[1]
        if cur is None:
            return None
        r = cur.executed_reward
        return r if r is not None else cur.best_reward

    @property
    def state_label(self) -> str:
        if self.state == "ended":
            return f"ended: {self.outcome or 'unknown'}"
        held = self.held
        if self.state == "waiting_approval" or held is not None:
            return f"waiting at {step_label(held[0])}" if held else "waiting for approval"
        return "running"

    def first_bad_steps(self) -> FirstBadSteps:
        """Where the session first went wrong (protocol/progress.py's rules), from each
        scored step's executed candidate."""
        judged = []
        for st in self.scored_steps:
            c = st.judged
            if c is not None:
                r = c.result
                judged.append(StepJudgement(st.step, r.reward, item_levels(r.items), r.feedback))
        return first_bad_steps(judged)

    @property
    def feedback(self) -> str:
        """Feedback text streaming in for the request being scored (candidate 0 first)."""
        if not self.progress:
            return ""
        return "\n".join(
            f"#{c}.{s}: {t}" if len(self.progress) > 1 else t
            for (c, s), t in sorted(self.progress.items())
        )


@dataclass
class ApprovalView:
    request_id: str
    session_id: str
    step: int
    action: str
    thought: str
    reward: float | None
    feedback: str
    reason: str
    expires_in_s: float
    order: int = 0
    # what a person needs to judge it (the daemon's card) and why it waits beyond the reason
    card: ApprovalCard | None = None
    guard: list[GuardHit] = field(default_factory=list)
    threshold: float | None = None


@dataclass
class HeldStep:
    """A held step as its ``approval.request`` said, and a person's decision on it (judge–person
    agreement, protocol/agreement.py)."""

    session_id: str
    step: int
    candidate_index: int | None
    reward: float | None
    threshold: float | None
    top_pick: bool | None = None  # the held candidate was the judge's top pick
    decision: PersonDecision | None = None  # a person's (a timeout or the daemon's: None)
