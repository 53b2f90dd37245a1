"""The monitor's sans-I/O model: daemon events in, a view of sessions, approvals and stats out.

Nothing here touches the network or Textual. :meth:`MonitorState.fold` takes one event (a
protocol model, or a plain dict as found in ``session.get`` history) and updates the views;
each view carries a ``version`` that grows when it changes, so widgets redraw only what moved.
Folding is idempotent where the daemon may repeat itself (a catch-up after a reconnect replays
history that was partly seen live): a step's ``scored`` replaces the step's candidates, an
``approval.resolved`` is remembered so a late-replayed request for it stays resolved.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from pydantic import BaseModel
from webshepherd.protocol.agreement import (
    Agreement,
    Decided,
    PersonDecision,
    agreement,
    by_person,
)
from webshepherd.protocol.common import (
    Candidate,
    ScoredCandidate,
)
from webshepherd.protocol.errors import ProtocolError
from webshepherd.protocol.replies import (
    ActionEvent,
    ApprovalRequest,
    ApprovalResolved,
    Checklist,
    CommitDecided,
    ModeSet,
    Observed,
    Scored,
    ScoreProgress,
    Session,
    SessionEnded,
    SessionStarted,
    Stats,
    TreeNodeEvent,
)
from webshepherd.protocol.steps import step_label
from webshepherd.protocol.union import SERVER_ADAPTER, SERVER_TYPES
from webshepherd.tui.views import (
    LABEL_MARK,
    ApprovalView,
    CommitView,
    HeldStep,
    SessionView,
    Signal,
    StepView,
)

__all__ = [
    "LABEL_MARK",
    "ApprovalView",
    "CommitView",
    "HeldStep",
    "MonitorState",
    "SessionView",
    "Signal",
    "StepView",
]


class MonitorState:
    """Sessions, pending approvals and the latest daemon stats, folded from events."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock  # stamps live sessions (their events carry no creation time)
        self.sessions: dict[str, SessionView] = {}
        self.approvals: dict[str, ApprovalView] = {}
        self.resolved: set[str] = set()
        self.held: dict[str, HeldStep] = {}  # every approval request seen, by request id
        self.decisions_version = 0  # grows when a person's decision or its top pick is known
        self._decided_early: dict[str, PersonDecision] = {}  # resolved before its request came
        self.stats: Stats | None = None
        self.events = 0
        self.version = 0  # grows when the set or order of sessions changes
        self.approvals_version = 0
        self.stats_version = 0
        self._order = 0
        self._at: float | None = None  # when the event being folded was received, if known

    # ------------------------------------------------------------------ queries

    def ordered(self) -> list[SessionView]:
        """Sessions, newest first."""
        return sorted(
            self.sessions.values(), key=lambda s: (s.created_at or 0.0, s.order), reverse=True
        )

    def pending(self) -> list[ApprovalView]:
        return sorted(self.approvals.values(), key=lambda a: a.order)

    def agreement(self, session_id: str | None = None) -> Agreement:
        """Judge–person agreement over a person's decisions seen (one session's, or all)."""
        return agreement(
            Decided(h.decision, h.reward, h.top_pick, h.threshold)
            for h in self.held.values()
            if h.decision is not None and session_id in (None, h.session_id)
        )

    # ------------------------------------------------------------------ folding

    def session(self, sid: str) -> SessionView:
        view = self.sessions.get(sid)
        if view is None:
            self._order += 1
            view = self.sessions[sid] = SessionView(sid, order=self._order)
            self.version += 1
        return view

    def fold_raw(self, data: Mapping[str, object], at: float | None = None) -> None:
        """Fold one event given as a dict (``session.get`` history, or a raw frame); ``at``:
        when it was received, as :meth:`fold` takes it."""
        kind = data.get("type")
        if kind == "signal":
            self._signal(data)
            return
        if kind not in SERVER_TYPES:
            return  # a type this monitor does not know: ignore it
        try:
            msg = SERVER_ADAPTER.validate_python(data)
        except Exception as exc:  # a malformed recorded event must not stop the monitor
            raise ProtocolError(f"cannot read a recorded {kind!r} event: {exc}") from None
        self.fold(msg, at)

    def fold(self, msg: BaseModel | Mapping[str, object], at: float | None = None) -> None:
        """Fold one event into the views. ``at``: when the caller received it (a live event;
        the wire's ``commit.decided`` carries no time), stamped on a decided paused request;
        None for history, whose times are not known."""
        if isinstance(msg, Mapping):
            self.fold_raw(msg, at)
            return
        self._at = at
        if getattr(msg, "type", None) == "signal":  # live signals arrive typed; as recorded ones
            self._signal(msg.model_dump(mode="json"))
            return
        self.events += 1
        self._handle(msg)

    def _handle(self, m: BaseModel) -> None:
        """The handler of the event's kind; a kind this view does not show is only counted."""
        match m:
            case SessionStarted():
                self._started(m)
            case Checklist():
                self._checklist(m)
            case Observed():
                self._observed(m)
            case ScoreProgress():
                self._progress(m)
            case Scored():
                self._scored(m)
            case ActionEvent():
                self._action(m)
            case TreeNodeEvent():
                self._tree_node(m)
            case ApprovalRequest():
                self._approval_request(m)
            case ApprovalResolved():
                self._approval_resolved(m)
            case SessionEnded():
                self._ended(m)
            case ModeSet():
                self._mode_set(m)
            case CommitDecided():
                self._commit_decided(m)
            case Stats():
                self._stats(m)

    def load_history(self, reply: Session) -> SessionView:
        """Replace one session's view by its recorded history (a catch-up after reconnecting)."""
        sid = reply.session.session_id
        old = self.sessions.get(sid)
        view = SessionView(sid, order=old.order if old else self._order + 1)
        if old is None:
            self._order += 1
            self.version += 1
        view.version = (old.version + 1) if old else 0
        view.steps_version = (old.steps_version + 1) if old else 0
        self.sessions[sid] = view
        for aid in [a for a, v in self.approvals.items() if v.session_id == sid]:
            del self.approvals[aid]
            self.approvals_version += 1
        if reply.checklist is not None:
            self.fold(reply.checklist)
        for event in reply.events:
            self.fold_raw(event)
        s = reply.session
        view.intent, view.agent, view.start_url = s.intent, s.agent.name, s.start_url
        view.created_at, view.state, view.outcome = s.created_at, s.state, s.outcome
        view.mode = s.mode or view.mode or (old.mode if old else None)
        if s.state != "waiting_approval":  # requests left over from before a restart are gone
            for aid in [a for a, v in self.approvals.items() if v.session_id == sid]:
                del self.approvals[aid]
            view.holding.clear()
        view.touch_steps()
        self.version += 1
        self.approvals_version += 1
        return view

    # ------------------------------------------------------------------ handlers

    def _started(self, m: SessionStarted) -> None:
        v = self.session(m.session_id)
        v.intent = m.intent or v.intent
        v.start_url = m.start_url or v.start_url
        v.last_url = v.last_url or m.start_url
        if v.created_at is None:
            v.created_at = self.clock()
            self.version += 1  # the order may change
        if m.agent is not None:
            v.agent = m.agent.name
        if m.mode is not None:
            v.mode = m.mode
        v.version += 1

    def _mode_set(self, m: ModeSet) -> None:
        v = self.session(m.session_id)
        v.mode = m.mode
        v.version += 1

    def _commit_decided(self, m: CommitDecided) -> None:
        """A paused request's answer, whichever it was (approved, flagged, refused), with the
        time it was received when the caller said."""
        v = self.session(m.session_id)
        v.commits.append(CommitView(m.request, m.decision, m.flagged, self._at))
        v.version += 1

    def _checklist(self, m: Checklist) -> None:
        v = self.session(m.session_id)
        v.checklist = [(i.index, i.title) for i in m.items]
        v.touch_steps()

    def _observed(self, m: Observed) -> None:
        if m.session_id is None:
            return
        v = self.session(m.session_id)
        s = v.step(m.step)
        if m.url:
            s.url = v.last_url = m.url
        v.touch_steps()

    def _progress(self, m: ScoreProgress) -> None:
        v = self.session(m.session_id)
        if v.progress_request != m.request:
            v.progress_request = m.request
            v.progress = {}
        key = (m.candidate, m.sample)
        v.progress[key] = v.progress.get(key, "") + m.delta
        v.version += 1

    def _scored(self, m: Scored) -> None:
        v = self.session(m.session_id)
        s = v.step(m.step)
        if s.url is None:
            s.url = v.last_url
        cands = m.candidates or []
        s.candidates = [
            ScoredCandidate(
                cands[r.index]
                if r.index < len(cands)
                else Candidate(action=f"candidate {r.index}"),
                r.model_copy(update={"samples": []}),  # the judge's texts: never shown, not kept
            )
            for r in m.results
        ]
        s.best = m.best
        d = m.decision
        if d.status in ("approved", "rejected", "edited") and d.index is not None:
            self._top_pick(m.session_id, m.step, d.index, d.index == m.best)
        s.decision, s.decision_action, s.decided = d.status, d.action, d
        s.chosen = d.index if d.index is not None else m.best
        if v.state == "waiting_approval":
            v.state = "running"
        v.progress_request, v.progress = None, {}
        v.touch_steps()

    def _top_pick(self, sid: str, step: int, index: int, top: bool) -> None:
        """The step's ``scored`` after a decision: whether the held candidate was the top pick."""
        for h in reversed(self.held.values()):
            if (h.session_id, h.step, h.candidate_index) == (sid, step, index):
                if h.top_pick != top:
                    h.top_pick = top
                    self.decisions_version += 1
                return

    def _action(self, m: ActionEvent) -> None:
        v = self.session(m.session_id)
        s = v.step(m.step)
        s.executed, s.executed_source = m.action, m.source
        if s.url is None:
            s.url = v.last_url
        prev = v.steps.get(m.step - 1)
        if (
            prev is not None
            and prev.executed == m.action
            and prev.url is not None
            and prev.url == s.url
            and not any(g.step == m.step and g.kind == "repeated_action" for g in v.signals)
        ):
            again = f"same action as {step_label(m.step - 1)} on {s.url}"
            v.signals.append(Signal(m.step, "repeated_action", again))
        v.touch_steps()

    def _tree_node(self, m: TreeNodeEvent) -> None:
        v = self.session(m.session_id)
        v.tree[m.node] = m
        v.tree_trying, v.tree_event = m.trying, (m.node, m.event)
        if m.event == "path":
            v.tree_path = [n for n in v.tree_path if v.tree[n].depth < m.depth] + [m.node]
        v.version += 1

    def _approval_request(self, m: ApprovalRequest) -> None:
        held = self.held.get(m.request_id)
        if held is None:
            early = self._decided_early.pop(m.request_id, None)
            held = self.held[m.request_id] = HeldStep(
                m.session_id, m.step, m.candidate_index, m.reward, m.threshold, decision=early
            )
            others = m.card.others if m.card is not None else []
            if others and held.top_pick is None:  # until the step's scored says
                held.top_pick = all(
                    o.reward is None or (m.reward is not None and m.reward >= o.reward)
                    for o in others
                )
            if held.decision is not None:
                self.decisions_version += 1
        if m.request_id in self.resolved:
            return
        self._order += 1
        self.approvals[m.request_id] = ApprovalView(
            request_id=m.request_id,
            session_id=m.session_id,
            step=m.step,
            action=m.candidate.action,
            thought=m.candidate.thought,
            reward=m.reward,
            feedback=m.feedback,
            reason=m.reason,
            expires_in_s=m.expires_in_s,
            order=self._order,
            card=m.card,
            guard=list(m.guard),
            threshold=m.threshold,
        )
        v = self.session(m.session_id)
        if v.state != "ended":
            v.state = "waiting_approval"
            v.holding[m.request_id] = (m.step, m.reward)
        v.version += 1
        self.approvals_version += 1

    def _approval_resolved(self, m: ApprovalResolved) -> None:
        self.resolved.add(m.request_id)
        held = self.held.get(m.request_id)
        if by_person(m.decision, m.by):
            if held is None:
                self._decided_early[m.request_id] = m.decision
            elif held.decision is None:
                held.decision = m.decision
                self.decisions_version += 1
        gone = self.approvals.pop(m.request_id, None)
        sid = m.session_id or (gone.session_id if gone else None)
        if sid is not None and sid in self.sessions:
            v = self.sessions[sid]
            v.holding.pop(m.request_id, None)
            if v.state == "waiting_approval" and not any(
                a.session_id == sid for a in self.approvals.values()
            ):
                v.state = "running"
            v.version += 1
        self.approvals_version += 1

    def _ended(self, m: SessionEnded) -> None:
        v = self.session(m.session_id)
        v.state, v.outcome = "ended", m.outcome
        v.holding.clear()
        v.progress_request, v.progress = None, {}
        v.version += 1

    def _stats(self, m: Stats) -> None:
        self.stats = m
        self.stats_version += 1

    def _signal(self, data: Mapping[str, object]) -> None:
        sid = data.get("session_id")
        if not isinstance(sid, str):
            return
        self.events += 1
        v = self.session(sid)
        step = data.get("step")
        kind = str(data.get("kind") or data.get("signal") or "signal")
        text = str(data.get("message") or data.get("detail") or kind)
        v.signals.append(Signal(step if isinstance(step, int) else None, kind, text))
        v.version += 1
