"""What the daemon knows about one session (in memory; rebuilt from SQLite after a restart)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields, replace
from typing import Literal

from webshepherd.daemon.engine.types import ParsedChecklist
from webshepherd.daemon.records.stored import StoredSession
from webshepherd.daemon.sessions.convert import parsed_checklist
from webshepherd.daemon.sessions.effects import RunScore
from webshepherd.daemon.sessions.guards import session_origin
from webshepherd.protocol.common import (
    CommitMode,
    ElementFacts,
    Outcome,
    SessionHeader,
    SessionState,
    SessionSummary,
    Turn,
)
from webshepherd.protocol.steps import step_count


@dataclass
class LiveSession:
    # what the session is and how it stands (replaced, never changed: it is immutable)
    header: SessionHeader
    owner: int | None = None  # connection that receives the session's events besides subscribers
    # how its commits and held steps are treated (sessions/modes.py); a paired person sets it
    mode: CommitMode = "ask"
    # "browser": its client's browser pauses commits (commit.check); the rules only predict
    holds: Literal["browser"] | None = None
    step: int = -1  # index of the current observation; -1 before the first
    url: str | None = None
    axtree: str | None = None
    # the latest observation's screenshot (kept in memory only: after a restart, text)
    screenshot: bytes | None = None
    screenshot_mime: str | None = None
    # the latest observation's element boxes and facts (in memory only, like the screenshot)
    boxes: dict[str, list[float]] | None = None
    elements: dict[str, ElementFacts] | None = None
    # the session's origin: its start_url's, else its first observation's (sessions/guards.py)
    origin: str | None = None
    # once known (the client's, the recorded or the generated one: sessions/checklists.py);
    # while the engine makes it, the scores that came wait here for it
    checklist: ParsedChecklist | None = None
    checklist_asked: bool = False
    awaiting_checklist: list[RunScore] = field(default_factory=list)
    history: list[Turn] = field(default_factory=list)
    acted_steps: set[int] = field(default_factory=set)  # the step indices of recorded actions
    step_rewards: dict[int, float] = field(default_factory=dict)
    step_candidates: dict[int, list[tuple[str, float | None]]] = field(default_factory=dict)
    # step -> action -> checklist item levels of its judgement (the stalled signal)
    step_progress: dict[int, dict[str, dict[int, int]]] = field(default_factory=dict)
    # a tree search's nodes: node -> (parent, depth, action), as first reported (tree.node)
    tree: dict[int, tuple[int | None, int, str | None]] = field(default_factory=dict)
    # and the thought reaching each (the judge's trajectory is the path to the expanded node)
    tree_thoughts: dict[int, str] = field(default_factory=dict)
    waiting_approvals: int = 0
    # origins a paired person allowed from a paused request's card (approval.decide's
    # allow_origin): later writes to them run flagged without asking; in memory only
    allowed_origins: dict[str, str] = field(default_factory=dict)  # origin -> who allowed it
    ended: bool = False
    answer: str | None = None
    last_active: float = field(default_factory=time.monotonic)  # for idle eviction

    def snapshot(self) -> LiveSession:
        """A copy to :meth:`roll_back` to (containers copied, big strings shared)."""
        return replace(
            self,
            history=list(self.history),
            awaiting_checklist=list(self.awaiting_checklist),
            acted_steps=set(self.acted_steps),
            step_rewards=dict(self.step_rewards),
            step_candidates=dict(self.step_candidates),
            step_progress=dict(self.step_progress),
            tree=dict(self.tree),
            tree_thoughts=dict(self.tree_thoughts),
            allowed_origins=dict(self.allowed_origins),
        )

    def tree_path(self, node: int) -> list[Turn]:
        """The turns of a tree search's path from its root to ``node`` (a thought not known
        after a restart is empty)."""
        turns: list[Turn] = []
        at: int | None = node
        while at is not None and at in self.tree:
            parent, _, action = self.tree[at]
            if action is not None:
                turns.append(Turn(thought=self.tree_thoughts.get(at, ""), action=action))
            at = parent
        return turns[::-1]

    def roll_back(self, snapshot: LiveSession) -> None:
        """Every field as it was in ``snapshot`` (the checklist, once known, stays)."""
        for f in fields(self):
            if f.name not in ("checklist", "owner"):
                setattr(self, f.name, getattr(snapshot, f.name))

    def remember_candidates(self, step: int, scored: list[tuple[str, float | None]]) -> None:
        """Keep the (action, reward) pairs scored at ``step``, newest first, across requests.

        Refinement scores one draft per request, so the executed action may come from an
        earlier request of the same step; a later score of the same action wins.
        """
        newer = {action for action, _ in scored}
        older = [p for p in self.step_candidates.get(step, []) if p[0] not in newer]
        self.step_candidates[step] = [*scored, *older]

    def remember_progress(self, step: int, judged: list[tuple[str, dict[int, int]]]) -> None:
        """Keep the checklist levels of the actions judged at ``step`` (a later score of the
        same action wins)."""
        self.step_progress[step] = {**self.step_progress.get(step, {}), **dict(judged)}

    def previous_reward(self, step: int) -> float | None:
        """The reward of the latest earlier step (executed candidate's, else the best)."""
        earlier = [s for s in self.step_rewards if s < step]
        return self.step_rewards[max(earlier)] if earlier else None

    def set_reward(self, reward: float | None) -> None:
        """The session's latest reward is now ``reward``."""
        self.header = self.header.model_copy(update={"latest_reward": reward})

    def end(self, outcome: Outcome, answer: str | None, at: float) -> None:
        """The session ended at ``at`` with ``outcome`` and the agent's ``answer``."""
        self.ended, self.answer = True, answer
        self.header = self.header.model_copy(update={"outcome": outcome, "ended_at": at})

    def summary(self) -> SessionSummary:
        state: SessionState
        if self.ended:
            state = "ended"
        elif self.waiting_approvals:
            state = "waiting_approval"
        else:
            state = "running"
        steps = step_count(self.step_candidates, self.acted_steps)
        return self.header.summary(state, steps, None if self.ended else self.mode)


def restored(stored: StoredSession, default_mode: CommitMode = "ask") -> LiveSession:
    """The machine's state of a recorded session (after a restart): its mode the latest one
    recorded (``mode.set``, else its start's), else ``default_mode``."""
    st = LiveSession(
        stored.header,
        ended=stored.header.ended_at is not None,
        answer=stored.answer,
        mode=stored.mode or default_mode,
        holds=stored.holds,
    )
    if stored.checklist is not None:
        st.checklist = parsed_checklist(stored.checklist)
    if stored.observation is not None:
        st.step, st.url, st.axtree = stored.observation
    # the first observation's URL is not read back: the latest stands in for it
    st.origin = session_origin(stored.header.start_url, st.url)
    st.history.extend(turn for _, turn in stored.actions)
    st.tree = {node: (parent, depth, action) for node, parent, depth, action in stored.tree}
    st.acted_steps.update(step for step, _ in stored.actions)
    for score in stored.scores:
        st.remember_candidates(score.step, [(a, r) for a, r, _ in score.candidates])
        st.remember_progress(
            score.step, [(a, levels) for a, _, levels in score.candidates if levels is not None]
        )
        rewards = [r for _, r, _ in score.candidates if r is not None]
        if rewards:
            st.step_rewards[score.step] = max(rewards)
    for step, turn in stored.actions:
        for action, reward in st.step_candidates.get(step, []):
            if action == turn.action and reward is not None:
                st.step_rewards[step] = reward
                break
    return st
