"""The sans-I/O session state machine: client messages in, effects out.

One class, :class:`SessionCore`: sessions (start, observe, act, end), scoring (``score`` asks
for an engine job, ``score_done`` answers it or opens an approval request) and approvals
(``decide`` / ``expire`` resolve a request). No sockets, no asyncio, no engine, no SQLite
here. The socket layer feeds messages (and engine results, approval decisions, timeouts) to
:class:`SessionCore` and carries out the returned effects in order.
"""

from __future__ import annotations

import base64
import binascii
import time
import uuid
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from webshepherd.daemon.engine.types import ParsedChecklist, StepInput, StepScore
from webshepherd.daemon.records import (
    ActionRecord,
    ApprovalDecidedRecord,
    ApprovalRequestedRecord,
    ChecklistRecord,
    LabelRecord,
    ObservationRecord,
    Record,
    ScoreDecisionRecord,
    ScoreRecord,
    ScorerRecord,
    SessionEndedRecord,
    SessionStartedRecord,
    StoredSession,
    TreeNodeRecord,
)
from webshepherd.daemon.sessions import convert
from webshepherd.daemon.sessions.approvals import (
    ApprovalBook,
    ApprovalPolicy,
    Resolution,
    approval_reason,
)
from webshepherd.daemon.sessions.cards import approval_card, commit_card
from webshepherd.daemon.sessions.effects import (
    ApprovalClosed,
    AwaitApproval,
    Effect,
    Publish,
    Reply,
    RunChecklist,
    RunScore,
    reply_and_publish,
)
from webshepherd.daemon.sessions.guards import (
    GuardPolicy,
    coordinate_notes,
    guard_hits,
    origin_of,
    session_origin,
)
from webshepherd.daemon.sessions.modes import (
    PAIR,
    STOP_WAY_OUT,
    commit_headline,
    in_sandbox,
    step_headline,
)
from webshepherd.daemon.sessions.signals import SignalBook
from webshepherd.daemon.sessions.state import LiveSession, restored
from webshepherd.protocol import requests as rq
from webshepherd.protocol.actions import ActionError, parse_action
from webshepherd.protocol.commits import request_digest, url_origin
from webshepherd.protocol.common import (
    MAX_ACTION_CHARS,
    ApprovalReason,
    Candidate,
    ChecklistSource,
    CommitMode,
    Decider,
    DecisionInfo,
    GuardHit,
    HeldRequest,
    Observation,
    Prediction,
    Screenshot,
    SessionSummary,
    Timing,
    Turn,
)
from webshepherd.protocol.errors import (
    ProtocolError,
    SessionClosedError,
    UnauthorizedError,
    UnknownSessionError,
)
from webshepherd.protocol.progress import item_levels
from webshepherd.protocol.replies import (
    ActionEvent,
    ActionRecorded,
    ApprovalRequest,
    ApprovalResolved,
    CommitDecided,
    LabelRecorded,
    ModeSet,
    Observed,
    Scored,
    SessionEnded,
    SessionStarted,
    TreeNodeEvent,
    TreeNodeRecorded,
)

__all__ = ["PendingCommit", "PendingScore", "Scorer", "SessionCore"]


@dataclass(frozen=True)
class Scorer:
    """The engine that scores the daemon's sessions: its model, backend and judging settings
    (recorded with each session's start)."""

    model: str
    backend: str
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass
class PendingScore:
    """A scored step waiting for a human decision (``best``: the candidate asked about)."""

    job: RunScore
    score: ScoreRecord
    best: int
    guard: list[GuardHit] = field(default_factory=list)  # the guard rules it met
    guarded: list[int] = field(default_factory=list)  # every candidate a guard rule holds
    predicted: list[Prediction] | None = None  # every candidate's hits (scored.predicted)


@dataclass(frozen=True)
class PendingCommit:
    """A request the browser paused, waiting for a paired person (``commit.check``)."""

    conn: int  # who asked: gets the commit.decided reply
    request_id: str  # the commit.check's id
    session_id: str
    request: HeldRequest
    digest: str
    mode: CommitMode


class SessionCore:
    """All sessions of the daemon and their approval requests."""

    def __init__(
        self,
        policy: ApprovalPolicy,
        *,
        guards: GuardPolicy | None = None,
        default_samples: int = 5,
        approval_timeout_s: float = 120.0,
        approval_default: str = "reject",
        clock: Callable[[], float] = time.time,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        scorer: Scorer | None = None,
        mode: CommitMode = "ask",
        sandbox_origins: tuple[str, ...] = (),
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self.policy = policy
        self.mode = mode  # a new session's (serve --mode)
        self.sandbox_origins = sandbox_origins  # flagged, never held (serve --sandbox-origin)
        self.scorer = scorer
        self.guards = guards if guards is not None else GuardPolicy()  # on unless told
        self.default_samples = default_samples
        self.approval_timeout_s = approval_timeout_s
        self.clock = clock
        self.monotonic = monotonic  # idle eviction's clock
        self.new_id = new_id
        self.sessions: dict[str, LiveSession] = {}
        self.approvals = ApprovalBook(approval_default)
        self._pending: dict[str, PendingScore] = {}
        self._commits: dict[str, PendingCommit] = {}  # approval request id -> paused request
        self.signals = SignalBook()  # live process signals (signals.py)
        # can a person answer an approval request now? (the socket layer: an extension or a
        # monitor is connected); a score that did not ask for approval is held only then
        self.person_present: Callable[[], bool] = lambda: True
        # is connection N still connected? (the socket layer's); a session held by a
        # connected one is refused to any other agent's
        self.connected: Callable[[int], bool] = lambda conn: True

    # -- lookup ----------------------------------------------------------
    def has(self, session_id: str) -> bool:
        return session_id in self.sessions

    def restore(self, state: LiveSession) -> None:
        """Adopt a session rebuilt from the recorder (after a restart)."""
        self.sessions.setdefault(state.session_id, state)

    def adopt(
        self,
        stored: StoredSession,
        signal_history: Iterable[tuple[str, str | None, str | None, int]],
        owner: int | None,
    ) -> list[Effect]:
        """Continue a recorded session (the first time it is addressed after a restart or an
        eviction), held by connection ``owner``: its signals rebuilt from ``signal_history``
        and, when a restart cut its checklist's generation off, the generation asked again."""
        if stored.session_id in self.sessions:
            return []
        state = restored(stored, self.mode)
        state.owner, state.last_active = owner, self.monotonic()
        self.restore(state)
        self.signals.rebuild(state.session_id, signal_history, state.agent, state.step_progress)
        if not state.ended and state.checklist is None:
            return [self.generate_checklist(state)]
        return []

    def owner_of(self, session_id: str) -> int | None:
        """The connection that holds a live session (None: none, or not loaded)."""
        st = self.sessions.get(session_id)
        return st.owner if st is not None else None

    def summary(self, session_id: str) -> SessionSummary | None:
        """A loaded session's summary as it is now (None: not loaded)."""
        st = self.sessions.get(session_id)
        return st.summary() if st is not None else None

    def check_live(self, session_id: str) -> None:
        """Raise unless ``session_id`` is a loaded session that has not ended."""
        st = self.sessions.get(session_id)
        if st is None:
            raise UnknownSessionError(f"session_id: no session {session_id!r}")
        if st.ended:
            raise SessionClosedError(f"session_id: session {session_id!r} has ended")

    def check_agent_holds(
        self, conn: int, session_id: str, what: str, *, is_agent: bool, who: str
    ) -> None:
        """Raise unless ``conn`` is an agent's connection (``who``: how it is named) and no
        other live connection holds ``session_id``."""
        if not is_agent:
            raise UnauthorizedError(f"{what}: only an agent's connection reports this, not {who!r}")
        owner = self.owner_of(session_id)
        if owner not in (None, conn) and self.connected(owner):
            raise UnauthorizedError(
                f"session_id: session {session_id!r} is held by another connection"
            )

    def check_environment_label(
        self, conn: int, msg: rq.Label, *, is_agent: bool, who: str
    ) -> None:
        """An environment label comes from an agent's connection, for a session no other live
        connection holds (a person's label: the socket layer checks the pairing)."""
        if not is_agent:
            raise UnauthorizedError(
                f"label: source 'environment' comes from an agent's connection, not {who!r}"
            )
        self.check_agent_holds(conn, msg.session_id, "label", is_agent=True, who=who)

    def owns(self, conn: int, session_id: str) -> bool:
        """Whether ``conn`` holds ``session_id``."""
        return self.owner_of(session_id) == conn

    def touch(self, session_id: str | None) -> None:
        """``session_id`` was just addressed (idle eviction counts from now)."""
        st = self.sessions.get(session_id or "")
        if st is not None:
            st.last_active = self.monotonic()

    def idle(self, idle_s: float, busy: Container[str]) -> list[str]:
        """Sessions nobody touched for ``idle_s``, with no open approval and not in ``busy``
        (an engine job or a step under way): to :meth:`evict`."""
        now = self.monotonic()
        return [
            sid
            for sid, st in self.sessions.items()
            if now - st.last_active >= idle_s and sid not in busy and not st.waiting_approvals
        ]

    def get(self, session_id: str, *, open_only: bool = True) -> LiveSession:
        st = self.sessions.get(session_id)
        if st is None:
            raise UnknownSessionError(f"session_id: no session {session_id!r}")
        if open_only and st.ended:
            raise SessionClosedError(f"session {session_id!r} has ended ({st.outcome})")
        return st

    def evict(self, session_id: str) -> None:
        """Forget an idle session (it stays readable from the record and is loaded again the
        next time it is addressed)."""
        self.sessions.pop(session_id, None)
        self.signals.forget(session_id)

    def checkpoint(self, session_id: str | None) -> Callable[[], None]:
        """An undo for what the next call does to ``session_id`` (None: to the set of
        sessions, for ``start``): the socket layer applies a state change only once its
        record is durable, and calls the undo when the write failed."""
        if session_id is None:
            before = set(self.sessions)

            def forget_new() -> None:
                for sid in set(self.sessions) - before:
                    del self.sessions[sid]
                    self.signals.forget(sid)

            return forget_new
        st = self.sessions.get(session_id)
        if st is None:
            return lambda: None
        saved, track = st.snapshot(), self.signals.snapshot(session_id)
        book, pending, commits = self.approvals.snapshot(), dict(self._pending), dict(self._commits)

        def roll_back() -> None:
            st.roll_back(saved)
            self.signals.restore(session_id, track)
            self.approvals.restore(book)
            self._pending, self._commits = pending, commits

        return roll_back

    @property
    def active(self) -> int:
        return sum(1 for s in self.sessions.values() if not s.ended)

    # -- session.start ---------------------------------------------------
    def start(
        self, conn: int, msg: rq.SessionStart, checklist: ParsedChecklist | None = None
    ) -> list[Effect]:
        """A new session. ``checklist``: the client's checklist, parsed; it is recorded with
        the session's start (else the engine is asked to generate one)."""
        sid = self.new_id()
        st = LiveSession(
            sid,
            msg.intent,
            msg.start_url,
            msg.agent,
            msg.source,
            self.clock(),
            owner=conn,
            mode=self.mode,
            holds=msg.holds,
        )
        self.sessions[sid] = st
        st.origin = session_origin(msg.start_url)
        st.last_active = self.monotonic()
        event = SessionStarted(
            session_id=sid,
            intent=msg.intent,
            start_url=msg.start_url,
            agent=msg.agent,
            source=msg.source,
            mode=st.mode,
            holds=st.holds,
        )
        out: list[Effect] = [SessionStartedRecord(event, st.created_at)]
        if self.scorer is not None:
            sc = self.scorer
            out.append(ScorerRecord(sid, sc.model, sc.backend, sc.settings))
        head = len(out)  # the start's own records
        observed = [] if msg.observation is None else self._observe(st, msg.observation, conn=None)
        # rows first, then the reply, then events in the order things happened
        out += [e for e in observed if isinstance(e, Record)]
        out.append(
            Reply(conn, SessionStarted(id=msg.id, session_id=sid, mode=st.mode, holds=st.holds))
        )
        out.append(Publish(sid, event, exclude=conn))
        out += [e for e in observed if not isinstance(e, Record)]
        if checklist is not None:
            ready = self.checklist_ready(sid, checklist, "reference")
            out[head:head] = [e for e in ready if isinstance(e, Record)]  # after the start's
            out += [e for e in ready if not isinstance(e, Record)]
        else:
            out.append(self.generate_checklist(st))
        return out

    def generate_checklist(self, st: LiveSession) -> RunChecklist:
        """Ask the engine for a checklist of ``st`` (at the start, or again after a
        generation that did not finish)."""
        return RunChecklist(
            st.session_id, st.intent, st.start_url or (st.url or ""), st.axtree or "", st.owner
        )

    def checklist_ready(
        self, session_id: str, parsed: ParsedChecklist, source: ChecklistSource
    ) -> list[Effect]:
        st = self.sessions[session_id]
        st.checklist = parsed
        event = convert.checklist_event(session_id, parsed, source)
        return [ChecklistRecord(event), Publish(session_id, event)]

    # -- observe ---------------------------------------------------------
    def observe(self, conn: int, msg: rq.Observe) -> list[Effect]:
        st = self.get(msg.session_id)
        return self._observe(st, msg.observation(), conn, msg.id)

    def _observe(
        self, st: LiveSession, obs: Observation, conn: int | None, rid: str | None = None
    ) -> list[Effect]:
        blob = _decode_screenshot(obs.screenshot)
        st.step += 1
        st.url, st.axtree = obs.url, obs.axtree
        st.screenshot = blob
        st.screenshot_mime = obs.screenshot.mime if obs.screenshot and blob else None
        st.boxes, st.elements = obs.boxes, obs.elements
        if st.origin is None:  # no start_url: the first observation's origin
            st.origin = session_origin(obs.url)
        self.signals.observed(st.session_id, obs.url, obs.axtree)
        event = Observed(
            session_id=st.session_id,
            step=st.step,
            url=obs.url,
            axtree=obs.axtree,
            screenshot=Screenshot(mime=obs.screenshot.mime, data=None) if obs.screenshot else None,
        )
        out: list[Effect] = [ObservationRecord(event, blob, self.clock(), obs.boxes)]
        if conn is not None and rid is not None:
            out.append(Reply(conn, Observed(id=rid, session_id=st.session_id, step=st.step)))
        out.append(Publish(st.session_id, event, exclude=conn))
        return out

    # -- action and end --------------------------------------------------
    def action(self, conn: int, msg: rq.Action) -> list[Effect]:
        st = self.get(msg.session_id)
        step = msg.step if msg.step is not None else max(st.step, 0)
        st.history.append(Turn(thought=msg.thought or "", action=msg.action))
        st.acted_steps.add(step)
        for action, reward in st.step_candidates.get(step, []):
            if action == msg.action and reward is not None:
                st.step_rewards[step] = reward  # the executed candidate's reward
                break
        event = ActionEvent(
            session_id=st.session_id,
            step=step,
            action=msg.action,
            thought=msg.thought,
            source=msg.source,
        )
        return [
            ActionRecord(event, self.clock()),
            Reply(conn, ActionRecorded(id=msg.id, session_id=st.session_id, step=step)),
            Publish(st.session_id, event, exclude=conn),
            *(
                Publish(st.session_id, sig)
                for sig in self.signals.action(
                    st.session_id,
                    step,
                    msg.action,
                    msg.thought,
                    st.agent,
                    st.step_progress.get(step, {}).get(msg.action),
                )
            ),
        ]

    def label(self, conn: int, by: str, msg: rq.Label) -> list[Effect]:
        """Ground truth for a candidate scored at ``msg.step`` (also after the session ended):
        one label per checklist item, recorded with who gave it (training targets come from
        it, docs/training.md)."""
        st = self.get(msg.session_id, open_only=False)
        if st.checklist is None:
            raise ProtocolError("label: the session has no checklist yet")
        n = len(st.checklist.items)
        if len(msg.items) != n:
            raise ProtocolError(f"items: {len(msg.items)} labels for a checklist of {n} items")
        if msg.action not in (a for a, _ in st.step_candidates.get(msg.step, [])):
            raise ProtocolError(f"action: not a candidate scored at step {msg.step}")
        return [
            LabelRecord(msg, by, self.clock()),
            Reply(conn, LabelRecorded(id=msg.id, session_id=st.session_id, step=msg.step)),
        ]

    def tree_node(self, conn: int, msg: rq.TreeNode) -> list[Effect]:
        """One node of the session's search tree, new or updated: checked against the nodes
        already reported (one root; a known parent one level up; parent, depth and action
        never change; a scored action was a candidate at its step), then recorded and sent
        to the session's subscribers. A node being expanded sets the judge's trajectory to
        the path reaching it (the actions of branches the search left are not in it)."""
        st = self.get(msg.session_id)
        known = st.tree.get(msg.node)
        first = (msg.parent, msg.depth, msg.action)
        if known is not None and known != first:
            parent, depth, _ = known
            raise ProtocolError(
                f"node: node {msg.node} was reported with parent {parent}, depth {depth} and "
                "another action; a node's parent, depth and action do not change"
            )
        if known is None and msg.parent is None:
            root = next((n for n, (p, _, _) in st.tree.items() if p is None), None)
            if root is not None:
                raise ProtocolError(f"parent: the tree has its root already (node {root})")
        if known is None and msg.parent is not None:
            up = st.tree.get(msg.parent)
            if up is None:
                raise ProtocolError(f"parent: no node {msg.parent} in this session's tree")
            if msg.depth != up[1] + 1:
                raise ProtocolError(
                    f"depth: {msg.depth} below node {msg.parent} of depth {up[1]} "
                    f"(expected {up[1] + 1})"
                )
        if msg.trying is not None and msg.trying not in st.tree and msg.trying != msg.node:
            raise ProtocolError(f"trying: no node {msg.trying} in this session's tree")
        for name, step in (("step", msg.step), ("expanded_at", msg.expanded_at)):
            if step is not None and step > st.step:
                raise ProtocolError(f"{name}: step {step} is not observed yet (at {st.step})")
        if (
            msg.step is not None
            and msg.action is not None
            and msg.action not in (a for a, _ in st.step_candidates.get(msg.step, []))
        ):
            raise ProtocolError(f"action: not a candidate scored at step {msg.step}")
        st.tree[msg.node] = first
        if known is None:
            st.tree_thoughts[msg.node] = msg.thought or ""
        if msg.event == "expanded":  # its children are scored next, from its page
            st.history = st.tree_path(msg.node)
        fields = msg.model_dump(exclude={"type", "id", "session_id"})
        event = TreeNodeEvent(session_id=st.session_id, **fields)
        return [
            TreeNodeRecord(event, self.clock()),
            Reply(conn, TreeNodeRecorded(id=msg.id, session_id=st.session_id, node=msg.node)),
            Publish(st.session_id, event, exclude=conn),
        ]

    def end(self, conn: int, msg: rq.SessionEnd) -> list[Effect]:
        st = self.get(msg.session_id)
        st.ended, st.outcome, st.answer, st.ended_at = True, msg.outcome, msg.answer, self.clock()
        self.signals.forget(st.session_id)
        event = SessionEnded(session_id=st.session_id, outcome=msg.outcome, answer=msg.answer)
        return [
            SessionEndedRecord(event, st.ended_at),
            *reply_and_publish(conn, msg.id, st.session_id, event),
        ]

    # -- score -----------------------------------------------------------
    def score(self, conn: int, msg: rq.Score) -> list[Effect]:
        st = self.get(msg.session_id)
        out: list[Effect] = []
        if msg.observation is not None:
            out += self._observe(st, msg.observation, conn=None)
        if st.axtree is None or st.url is None:
            raise ProtocolError(
                "observation: the session has no observation yet; send observe first "
                "or put one inline in score"
            )
        if st.checklist is None:  # its generation is under way, or did not finish: once more
            out.append(self.generate_checklist(st))
        judged = StepInput(
            intent=st.intent,
            current_url=st.url,
            axtree=st.axtree,
            checklist=st.checklist,  # None: the runner adds the generation's
            history=tuple(st.history),
            candidates=tuple(msg.candidates),
            samples=msg.samples or self.default_samples,
            screenshot=st.screenshot,
            screenshot_mime=st.screenshot_mime,
        )
        out.append(
            RunScore(
                st.session_id,
                conn,
                msg.id,
                st.step,
                judged,
                msg.approval,
                boxes=st.boxes,
                elements=st.elements,
                origin=st.origin,
                owner=st.owner,
            )
        )
        return out

    def score_done(self, job: RunScore, result: StepScore, timing: Timing) -> list[Effect]:
        st = self.sessions[job.session_id]
        candidates = list(job.input.candidates)  # the client's, as the request carried them
        results = [convert.candidate_result(c) for c in result.candidates]
        best = convert.best_index(results)
        best_reward = results[best].reward if best is not None else None
        st.remember_candidates(
            job.step,
            [(c.action, r.reward) for c, r in zip(candidates, results, strict=False)],
        )
        st.remember_progress(
            job.step,
            [
                (c.action, item_levels(r.items))
                for c, r in zip(candidates, results, strict=False)
                if r.items
            ],
        )
        index = best if best is not None else 0
        hits = {i: h for i in range(len(candidates)) if (h := self._hits(job, i))}
        unread = {  # coordinate calls whose target no box names (guards.coordinate_notes)
            i: n for i, c in enumerate(candidates) if (n := coordinate_notes(c.action, job.boxes))
        }
        predicted = [
            Prediction(index=i, hits=hits.get(i, []), notes=unread.get(i, [])[:16])
            for i in sorted(hits.keys() | unread.keys())
        ] or None
        # the rules hold only where no browser gate does, off the sandbox, outside 'watch'
        sandboxed = in_sandbox(origin_of(job.input.current_url), self.sandbox_origins)
        rules_hold = st.holds is None and not sandboxed and st.mode != "watch"
        guard = hits.get(index, []) if rules_hold else []
        guarded = sorted(hits) if rules_hold else []
        present = self.person_present()
        previous = st.previous_reward(job.step)
        reason = approval_reason(
            job.approval,
            best_reward,
            previous,
            self.policy,
            person_present=present,
            guarded=bool(guard),
        )
        unheld: Decider | None = None  # who let a step the rules or the reward met run
        if st.holds is None and hits.get(index) and not guard:
            unheld = "sandbox" if sandboxed else "mode" if st.mode == "watch" else None
        if reason in ("below_threshold", "reward_drop") and st.mode == "watch":
            reason, unheld = None, "mode"  # watching: a reward never turns a step into a wait
        if best_reward is not None:
            st.step_rewards[job.step] = best_reward
            st.latest_reward = best_reward
        score = ScoreRecord(
            session_id=job.session_id,
            request_id=job.request_id,
            step=job.step,
            samples=job.input.samples,
            approval=job.approval,
            candidates=candidates,
            results=results,
            best=best,
            timing=timing,
            created_at=self.clock(),
            latest_reward=st.latest_reward,
        )
        if reason is None:
            action = score.candidates[best].action if best is not None else None
            decision = DecisionInfo(
                status="auto", index=best, action=action, decider=unheld, mode=st.mode
            )
            return [score, *self._scored(job, score, best, decision, guarded, predicted)]
        cand = score.candidates[index]
        why = self._why(reason, guard, best_reward, previous)
        if st.mode == "stop":
            note = f"{why}; the session's mode is 'stop', so it was refused without asking"
            return [
                score,
                *self._refuse(
                    job, score, index, reason, guard, guarded, predicted,
                    note=note, decider="mode", way_out=STOP_WAY_OUT,
                ),
            ]  # fmt: skip
        if guard and not present:
            rules = " ".join(f"--no-guard {h.rule}" for h in guard)
            page = origin_of(job.input.current_url) or "<origin>"
            note = f"{why}; no person is connected to decide, so the guard refused it"
            way_out = (
                f"`serve {rules}` (that rule off), `serve --sandbox-origin {page}` (a sandbox "
                f"site: flagged, not held), or {PAIR}"
            )
            return [
                score,
                *self._refuse(
                    job, score, index, reason, guard, guarded, predicted,
                    note=note, decider="guard", way_out=way_out,
                ),
            ]  # fmt: skip
        req = self.approvals.open(job.session_id, job.step, index, cand.action, guarded=bool(guard))
        self._pending[req.request_id] = PendingScore(job, score, index, guard, guarded, predicted)
        st.waiting_approvals += 1
        facts = (job.elements or {}).get(_bid_of(cand.action) or "")
        card = approval_card(
            candidates,
            results,
            index,
            axtree=job.input.axtree,
            boxes=job.boxes,
            elements=job.elements,
            screenshot=job.input.screenshot,
            screenshot_mime=job.input.screenshot_mime,
            predicts=hits.get(index, []),
        )
        headline = step_headline(
            reason,
            guard,
            reward=results[index].reward,
            threshold=self.policy.threshold,
            previous=previous,
            facts=facts,
            destination=card.destination,
        )
        card = card.model_copy(update={"headline": headline[:1024]})
        event = ApprovalRequest(
            request_id=req.request_id,
            session_id=job.session_id,
            step=job.step,
            candidate=cand,
            candidate_index=index,
            reward=results[index].reward,
            feedback=results[index].feedback,
            reason=reason,
            expires_in_s=self.approval_timeout_s,
            guard=guard,
            threshold=self.policy.threshold,
            card=card,
        )
        return [
            score,
            ApprovalRequestedRecord(event, self.clock()),
            Publish(job.session_id, event, to_approvers=True),
            AwaitApproval(req.request_id, self.approval_timeout_s),
        ]

    def _why(
        self,
        reason: ApprovalReason,
        guard: list[GuardHit],
        reward: float | None,
        previous: float | None,
    ) -> str:
        """Why a step would wait for a person, in words (a refusal's note starts with it)."""
        if guard:
            rules = ", ".join(h.rule for h in guard)
            return f"guarded ({rules}): {'; '.join(h.detail for h in guard)}"
        shown = "none parsed" if reward is None else f"{reward:.3f}"
        if reason == "below_threshold":
            return f"the best reward ({shown}) is below the approval threshold"
        if reason == "reward_drop":
            return f"the best reward ({shown}) fell from the previous step's ({previous})"
        return "the score asked for approval (approval='always')"

    def _refuse(
        self,
        job: RunScore,
        score: ScoreRecord,
        index: int,
        reason: ApprovalReason,
        guard: list[GuardHit],
        guarded: list[int],
        predicted: list[Prediction] | None,
        *,
        note: str,
        decider: Decider,
        way_out: str,
    ) -> list[Effect]:
        """A step refused at once, not held until a timeout (the guard with nobody connected
        to decide, or the session's 'stop' mode), never approved silently. Recorded as an
        approval request rejected by the daemon, so the recording keeps why."""
        note = note[:4000]
        cand, result = score.candidates[index], score.results[index]
        req, res = self.approvals.refuse(job.session_id, job.step, index, cand.action, note)
        asked = ApprovalRequest(
            request_id=req.request_id,
            session_id=job.session_id,
            step=job.step,
            candidate=cand,
            candidate_index=index,
            reward=result.reward,
            feedback=result.feedback,
            reason=reason,
            expires_in_s=0.0,
            guard=guard,
        )
        resolved = ApprovalResolved(
            request_id=req.request_id,
            session_id=job.session_id,
            decision="reject",
            by=res.by,
            note=note,
        )
        decision = DecisionInfo(
            status="rejected",
            index=index,
            action=None,
            by=res.by,
            note=note,
            guard=guard,
            decider=decider,
            way_out=way_out[:1024],
            mode=self.sessions[job.session_id].mode,
        )
        return [
            ApprovalRequestedRecord(asked, self.clock()),
            ApprovalDecidedRecord(resolved, res.status, self.clock()),
            *self._scored(job, score, index, decision, guarded, predicted),
        ]

    def _hits(self, job: RunScore, index: int) -> list[GuardHit]:
        """The guard rules candidate ``index`` of ``job`` meets on the step's page."""
        return guard_hits(
            self.guards,
            job.input.candidates[index].action,
            url=job.input.current_url,
            axtree=job.input.axtree,
            elements=job.elements,
            origin=job.origin,
            boxes=job.boxes,
        )

    def _scored(
        self,
        job: RunScore,
        score: ScoreRecord,
        best: int | None,
        decision: DecisionInfo,
        guarded: list[int],
        predicted: list[Prediction] | None = None,
    ) -> list[Effect]:
        """The ``scored`` reply and event; ``guarded``: the candidates that meet a guard rule
        (an agent that runs one other than the held best, as tree search does, asks for it
        first by scoring it alone); ``predicted``: every candidate's hits."""
        event = Scored(
            session_id=job.session_id,
            step=job.step,
            results=score.results,
            best=best,
            decision=decision,
            timing=score.timing,
            candidates=score.candidates,
            guarded=guarded or None,
            predicted=predicted,
        )
        return [
            ScoreDecisionRecord(job.request_id, event),
            # the requester's reply carries no echo of the candidates (it sent them)
            *reply_and_publish(
                job.conn, job.request_id, job.session_id, event, {"candidates": None}
            ),
        ]

    # -- modes and paused requests ----------------------------------------------
    def set_mode(self, conn: int, by: str, msg: rq.SessionMode) -> list[Effect]:
        """A paired person sets the session's mode (the server lets only such a connection
        send it); ``mode.set`` is the reply and an event to subscribers and approvers."""
        st = self.get(msg.session_id)
        st.mode = msg.mode
        event = ModeSet(session_id=st.session_id, mode=msg.mode, by=by)
        return [
            Reply(conn, event.model_copy(update={"id": msg.id})),
            Publish(st.session_id, event, exclude=conn, to_approvers=True),
        ]

    def commit_check(self, conn: int, msg: rq.CommitCheck, *, approver: str | None) -> list[Effect]:
        """A request the browser paused before it left, decided by the session's mode and the
        sandbox origins: the session's owner connection asks, or a paired person's tool
        (``approver``: its label; the extension holds requests in the tabs it watches)."""
        st = self.get(msg.session_id)
        if conn != st.owner and approver is None:
            raise UnauthorizedError(
                "commit.check: only the session's own connection or a paired person's tool "
                f"asks about its requests; session {st.session_id!r} is another connection's"
            )
        req = msg.request
        digest = request_digest(req)
        target = url_origin(req.url)  # read from the URL, never from the client's `origin`
        page = url_origin(req.page_url) if req.page_url else None
        sandbox = next((o for o in (target, page) if in_sandbox(o, self.sandbox_origins)), None)

        def answer(
            status: Literal["approved", "rejected"],
            decider: Decider,
            note: str,
            way_out: str | None = None,
            flagged: bool = False,
        ) -> list[Effect]:
            info = DecisionInfo(
                status=status,
                by="daemon",
                note=note,
                decider=decider,
                way_out=way_out,
                mode=st.mode,
            )
            return self._commit_decided(conn, msg.id, st.session_id, req, digest, info, flagged)

        if sandbox is not None:
            note = f"{sandbox} is a sandbox origin (serve --sandbox-origin): flagged, not held"
            return answer("approved", "sandbox", note, flagged=True)
        if st.mode == "watch":
            note = "the session's mode is 'watch': it runs, flagged"
            return answer("approved", "mode", note, flagged=True)
        if st.mode == "stop":
            note = "the session's mode is 'stop': a request that commits is refused without asking"
            return answer("rejected", "mode", note, STOP_WAY_OUT)
        action = (req.trigger or f"{req.method} {req.url}")[:MAX_ACTION_CHARS]
        step = max(st.step, 0)
        if not self.person_present():
            note = (
                f"{commit_headline(req).removeprefix('Waiting for you: ')}; no person is "
                "paired and connected to decide, so the daemon refused it"
            )
            way_out = (
                f"`serve --sandbox-origin {target or '<origin>'}` (or `serve --mode watch`), "
                f"or {PAIR}"
            )
            asked, resolved = self._commit_rows(st.session_id, step, action, req, note)
            return [asked, resolved, *answer("rejected", "daemon", note, way_out)]
        opened = self.approvals.open(st.session_id, step, 0, action, guarded=True)
        self._commits[opened.request_id] = PendingCommit(
            conn, msg.id, st.session_id, req, digest, st.mode
        )
        st.waiting_approvals += 1
        event = ApprovalRequest(
            request_id=opened.request_id,
            session_id=st.session_id,
            step=step,
            candidate=Candidate(thought="", action=action),
            candidate_index=None,
            reward=None,
            reason="commit",
            expires_in_s=self.approval_timeout_s,
            card=commit_card(req, commit_headline(req)),
        )
        return [
            ApprovalRequestedRecord(event, self.clock()),
            Publish(st.session_id, event, to_approvers=True),
            AwaitApproval(opened.request_id, self.approval_timeout_s),
        ]

    def _commit_rows(
        self, session_id: str, step: int, action: str, req: HeldRequest, note: str
    ) -> tuple[ApprovalRequestedRecord, ApprovalDecidedRecord]:
        """The approval row of a paused request the daemon refused at once (nobody to ask)."""
        opened, res = self.approvals.refuse(session_id, step, 0, action, note)
        asked = ApprovalRequest(
            request_id=opened.request_id,
            session_id=session_id,
            step=step,
            candidate=Candidate(thought="", action=action),
            candidate_index=None,
            reward=None,
            reason="commit",
            expires_in_s=0.0,
            card=commit_card(req, commit_headline(req)),
        )
        resolved = ApprovalResolved(
            request_id=opened.request_id,
            session_id=session_id,
            decision="reject",
            by=res.by,
            note=note,
        )
        return (
            ApprovalRequestedRecord(asked, self.clock()),
            ApprovalDecidedRecord(resolved, res.status, self.clock()),
        )

    def _commit_decided(
        self,
        conn: int,
        rid: str,
        session_id: str,
        req: HeldRequest,
        digest: str,
        decision: DecisionInfo,
        flagged: bool,
    ) -> list[Effect]:
        """``commit.decided``: the requester's reply, and an event to the session's owner,
        subscribers and approvers (logged with the session's events)."""
        event = CommitDecided(
            session_id=session_id,
            request=req,
            request_digest=digest,
            decision=decision,
            flagged=flagged,
        )
        return [
            Reply(conn, event.model_copy(update={"id": rid})),
            Publish(session_id, event, exclude=conn, to_approvers=True),
        ]

    # -- approvals -------------------------------------------------------
    def decide(self, conn: int, by: str, msg: rq.ApprovalDecide) -> list[Effect]:
        if msg.decision == "edit" and msg.request_id in self._commits:
            raise ProtocolError(
                "decision: a request the browser paused is approved or rejected as it is; "
                "'edit' does not apply to it"
            )
        res = self.approvals.decide(msg.request_id, msg.decision, msg.action, by, msg.note)
        return self._resolved(res, conn, msg.id)

    def close_orphaned_approvals(self, open_: list[tuple[str, str]]) -> list[Effect]:
        """``(request_id, session_id)`` of approval requests a restart left open: the
        ``scored`` reply that waited for them died with the daemon, so they are closed as
        ``timeout`` by ``daemon``, recorded, and logged as ``approval.resolved`` events (the
        waiting client reads it with ``session.get``, approvers see no stale request)."""
        out: list[Effect] = []
        note = "the daemon restarted before anyone decided; score the step again to ask again"
        for request_id, session_id in open_:
            event = ApprovalResolved(
                request_id=request_id,
                session_id=session_id,
                decision="timeout",
                by="daemon",
                note=note,
            )
            out.append(ApprovalDecidedRecord(event, "timeout", self.clock()))
            out.append(Publish(session_id, event, to_approvers=True))
        return out

    def expire(self, request_id: str) -> list[Effect]:
        res = self.approvals.expire(request_id)
        return [] if res is None else self._resolved(res, None, None)

    def _resolved(self, res: Resolution, conn: int | None, rid: str | None) -> list[Effect]:
        commit = self._commits.pop(res.request_id, None)
        st = self.sessions[res.session_id]
        st.waiting_approvals = max(0, st.waiting_approvals - 1)
        timed_out = res.decision == "timeout"
        decider: Decider = "timeout" if timed_out else "person"
        note = res.note
        if commit is not None and timed_out:
            note = (
                f"nobody decided within {self.approval_timeout_s:g} s; refused (a paused "
                "request is never let go by default)"
            )
        event = ApprovalResolved(
            request_id=res.request_id,
            session_id=res.session_id,
            decision=res.decision,
            action=None if commit is not None else res.action,
            by=res.by,
            note=note,
        )
        out: list[Effect] = [
            ApprovalDecidedRecord(event, res.status, self.clock()),
            Publish(res.session_id, event, to_approvers=True, exclude=conn),
        ]
        if conn is not None and rid is not None:
            out.append(Reply(conn, event.model_copy(update={"id": rid})))
        out.append(ApprovalClosed(res.request_id))
        way_out = None
        if not res.approved:
            way_out = (
                f"a paired person decides within {self.approval_timeout_s:g} s (TUI or side "
                "panel), or switches this session to 'watch'"
                if timed_out
                else "a paired person approves it when asked again, or switches this session "
                "to 'watch'"
            )
        if commit is not None:
            info = DecisionInfo(
                status=res.status,
                by=res.by,
                note=note,
                decider=decider,
                way_out=way_out,
                mode=commit.mode,
            )
            return out + self._commit_decided(
                commit.conn,
                commit.request_id,
                commit.session_id,
                commit.request,
                commit.digest,
                info,
                False,
            )
        pending = self._pending.pop(res.request_id)
        decision = DecisionInfo(
            status=res.status,
            index=pending.best,
            action=res.action if res.approved else None,
            by=res.by,
            note=res.note,
            guard=pending.guard,
            decider=decider,
            way_out=way_out,
            mode=st.mode,
        )
        return out + self._scored(
            pending.job,
            pending.score,
            pending.best,
            decision,
            pending.guarded,
            pending.predicted,
        )


def _bid_of(action: str) -> str | None:
    """The bid an action string names, if it parses."""
    try:
        return parse_action(action).bid
    except ActionError:
        return None


def _decode_screenshot(shot: Screenshot | None) -> bytes | None:
    if shot is None or shot.data is None:
        return None
    try:
        return base64.b64decode(shot.data, validate=True)
    except (binascii.Error, ValueError):
        raise ProtocolError("screenshot.data: not valid base64") from None
