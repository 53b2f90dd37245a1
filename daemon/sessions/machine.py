"""The sans-I/O session state machine: client messages in, effects out.

:class:`SessionCore` holds the sessions: their lifecycle (start, observe, act, label, tree
nodes, end), who may address one (``check_*``), restore (``adopt``), ownership and activity
(``touch``, ``idle``), and ``score`` (an engine job). Its collaborators hold the rest:
``scoring.py`` (a job's result: scored, refused or held), ``commits.py`` (modes and paused
requests), ``decisions.py`` (approval requests resolved). No sockets, no asyncio, no engine,
no SQLite here: the socket layer feeds messages (and engine results, approval decisions,
timeouts) to :class:`SessionCore` and carries out the returned effects in order.
"""

from __future__ import annotations

import base64
import binascii
import time
import uuid
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field
from typing import Any

from typing_extensions import assert_never
from webshepherd.daemon.engine.types import ParsedChecklist, StepInput, StepScore
from webshepherd.daemon.records.actions import ActionRecord
from webshepherd.daemon.records.kind import Record
from webshepherd.daemon.records.labels import LabelRecord
from webshepherd.daemon.records.observations import ObservationRecord
from webshepherd.daemon.records.sessions import (
    EnvironmentRecord,
    ScorerRecord,
    SessionEndedRecord,
    SessionStartedRecord,
)
from webshepherd.daemon.records.stored import StoredSession
from webshepherd.daemon.records.tree_nodes import TreeNodeRecord
from webshepherd.daemon.sessions.approvals import (
    ApprovalBook,
    ApprovalPolicy,
)
from webshepherd.daemon.sessions.caller import Caller, Connections
from webshepherd.daemon.sessions.checklists import Checklists
from webshepherd.daemon.sessions.commits import Commits, PendingCommit
from webshepherd.daemon.sessions.decisions import Decisions
from webshepherd.daemon.sessions.effects import (
    Effect,
    Publish,
    Reply,
    RunScore,
    reply_and_publish,
)
from webshepherd.daemon.sessions.guards import (
    GuardPolicy,
    session_origin,
)
from webshepherd.daemon.sessions.scoring import PendingScore, Scoring
from webshepherd.daemon.sessions.signals import SignalBook
from webshepherd.daemon.sessions.state import LiveSession, restored
from webshepherd.daemon.sessions.tree_nodes import check_tree_node
from webshepherd.protocol import requests as rq
from webshepherd.protocol.common import (
    CommitMode,
    Observation,
    Screenshot,
    SessionHeader,
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
from webshepherd.protocol.replies import (
    ActionEvent,
    ActionRecorded,
    LabelRecorded,
    Observed,
    SessionEnded,
    SessionStarted,
    Signal,
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
        commit_patterns: tuple[str, ...] = (),
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self.policy = policy
        self.mode = mode  # a new session's (serve --mode)
        self.sandbox_origins = sandbox_origins  # flagged, never held (serve --sandbox-origin)
        # GETs that commit (serve --commits): told to every gate, read by the rules
        self.commit_patterns = commit_patterns
        self.scorer = scorer
        self.guards = guards if guards is not None else GuardPolicy()  # on unless told
        self.default_samples = default_samples
        self.approval_timeout_s = approval_timeout_s
        self.clock = clock
        self.monotonic = monotonic  # idle eviction's clock
        self.new_id = new_id
        self.sessions: dict[str, LiveSession] = {}
        self.approvals = ApprovalBook(approval_default)
        self.signals = SignalBook()  # live process signals (signals.py)
        self.scoring = Scoring(self)  # scored steps and the ones held for a person
        self.commits = Commits(self)  # modes and requests the browser paused
        self.decisions = Decisions(self, self.commits, self.scoring)  # approvals resolved
        self.checklists = Checklists(self.sessions)  # each session's, and scores waiting for it
        # the open connections, as the socket layer reports them: a session held by one is
        # refused to any other agent's; a score that did not ask for approval, or a paused
        # request, is held for a person only while a paired person's tool is among them
        self.connections = Connections()

    def person_present(self) -> bool:
        """Whether a person can answer an approval request now."""
        return self.connections.person_present()

    def places(self, session_id: str) -> tuple[str, ...]:
        """Where a person could decide ``session_id``'s approval requests now."""
        return self.connections.places(session_id)

    # -- lookup ----------------------------------------------------------
    def has(self, session_id: str) -> bool:
        return session_id in self.sessions

    def restore(self, state: LiveSession) -> None:
        """Adopt a session rebuilt from the recorder (after a restart)."""
        self.sessions.setdefault(state.header.session_id, state)

    def adopt(
        self,
        stored: StoredSession,
        signal_history: Iterable[tuple[str, str | None, str | None, int]],
        owner: int | None,
    ) -> list[Effect]:
        """Continue a recorded session (the first time it is addressed after a restart or an
        eviction), held by connection ``owner``: its signals rebuilt from ``signal_history``
        and, when a restart cut its checklist's generation off, the generation asked again."""
        if stored.header.session_id in self.sessions:
            return []
        state = restored(stored, self.mode)
        state.owner, state.last_active = owner, self.monotonic()
        self.restore(state)
        self.signals.rebuild(
            state.header.session_id, signal_history, state.header.agent, state.step_progress
        )
        return [] if state.ended else self.checklists.ask(state)

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

    def check_agent_holds(self, caller: Caller, session_id: str, what: str) -> None:
        """Raise unless ``caller`` is an agent's connection and no other open connection
        holds ``session_id``."""
        if not caller.is_agent:
            raise UnauthorizedError(
                f"{what}: only an agent's connection reports this, not {caller.who!r}"
            )
        owner = self.owner_of(session_id)
        if owner not in (None, caller.id) and owner in self.connections:
            raise UnauthorizedError(
                f"session_id: session {session_id!r} is held by another connection"
            )

    def check_environment_label(self, caller: Caller, msg: rq.Label) -> None:
        """An environment (or replay, or rollout) label comes from an agent's connection, for
        a session no other open connection holds (a person's label: the socket layer checks
        the pairing)."""
        if not caller.is_agent:
            raise UnauthorizedError(
                f"label: source {msg.source!r} comes from an agent's connection, not {caller.who!r}"
            )
        self.check_agent_holds(caller, msg.session_id, "label")

    def approval_session(self, request_id: str) -> str | None:
        """The session of an open approval request (None: unknown or already closed)."""
        return self.approvals.session_of(request_id)

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
            raise SessionClosedError(f"session {session_id!r} has ended ({st.header.outcome})")
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
        book = self.approvals.snapshot()
        pending, commits = dict(self.scoring.pending), dict(self.commits.pending)

        def roll_back() -> None:
            st.roll_back(saved)
            self.signals.restore(session_id, track)
            self.approvals.restore(book)
            self.scoring.pending, self.commits.pending = pending, commits

        return roll_back

    @property
    def active(self) -> int:
        return sum(1 for s in self.sessions.values() if not s.ended)

    # -- one step of a session, from a caller ----------------------------
    def handle(self, caller: Caller, msg: rq.SessionRequest) -> list[Effect]:
        """A request that is one step of the session it names, from ``caller``: who may send
        it checked here (a person's credential by the socket layer first, ``person_verb``)."""
        verb = msg.person_verb()
        if verb is not None and not caller.paired:
            raise UnauthorizedError(
                f"{msg.type}: may not {verb}: {caller.who!r} is not a paired person's tool"
            )
        match msg:
            case rq.Observe():
                return self.observe(caller.id, msg)
            case rq.Score():
                return self.score(caller.id, msg)
            case rq.Action():
                return self.action(caller.id, msg)
            case rq.SessionEnd():
                return self.end(caller.id, msg)
            case rq.Label():
                if msg.source != "person":
                    self.check_environment_label(caller, msg)
                return self.label(caller.id, caller.label, msg)
            case rq.TreeNode():
                self.check_agent_holds(caller, msg.session_id, "tree.node")
                return self.tree_node(caller.id, msg)
            case rq.SessionMode():
                return self.set_mode(caller.id, caller.label, msg)
            case _:
                assert_never(msg)

    # -- session.start ---------------------------------------------------
    def start(
        self, conn: int, msg: rq.SessionStart, checklist: ParsedChecklist | None = None
    ) -> list[Effect]:
        """A new session. ``checklist``: the client's checklist, parsed; it is recorded with
        the session's start (else the engine is asked to generate one)."""
        sid = self.new_id()
        header = SessionHeader(
            session_id=sid,
            intent=msg.intent,
            start_url=msg.start_url,
            agent=msg.agent,
            source=msg.source,
            created_at=self.clock(),
        )
        st = LiveSession(
            header,
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
            commits=list(self.commit_patterns) or None,
        )
        out: list[Effect] = [SessionStartedRecord(event, st.header.created_at)]
        if self.scorer is not None:
            sc = self.scorer
            out.append(ScorerRecord(sid, sc.model, sc.backend, sc.settings))
        if msg.environment is not None:
            out.append(EnvironmentRecord(sid, msg.environment))
        head = len(out)  # the start's own records
        observed = [] if msg.observation is None else self._observe(st, msg.observation, conn=None)
        # rows first, then the reply, then events in the order things happened
        out += [e for e in observed if isinstance(e, Record)]
        out.append(
            Reply(
                conn,
                SessionStarted(
                    id=msg.id,
                    session_id=sid,
                    mode=st.mode,
                    holds=st.holds,
                    commits=event.commits,
                ),
            )
        )
        out.append(Publish(sid, event, exclude=conn))
        out += [e for e in observed if not isinstance(e, Record)]
        if checklist is not None:
            ready = self.checklists.ready(sid, checklist, "reference")
            out[head:head] = [e for e in ready if isinstance(e, Record)]  # after the start's
            out += [e for e in ready if not isinstance(e, Record)]
        else:
            out += self.checklists.ask(st)
        return out

    def checklist_ready(self, session_id: str, parsed: ParsedChecklist) -> list[Effect]:
        """The engine made the session's checklist: recorded, and the waiting scores go."""
        return self.checklists.ready(session_id, parsed, "generated")

    def checklist_failed(self, session_id: str, why: str) -> list[Effect]:
        """The engine made no checklist (``why``: what a client may read): the waiting scores
        are answered without a reward, saying why."""
        out: list[Effect] = []
        for job, result, timing in self.checklists.failed(session_id, why):
            out += self.score_done(job, result, timing)
        return out

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
        self.signals.observed(st.header.session_id, obs.url, obs.axtree)
        event = Observed(
            session_id=st.header.session_id,
            step=st.step,
            url=obs.url,
            axtree=obs.axtree,
            screenshot=Screenshot(mime=obs.screenshot.mime, data=None) if obs.screenshot else None,
        )
        out: list[Effect] = [ObservationRecord(event, blob, self.clock(), obs.boxes)]
        if conn is not None and rid is not None:
            out.append(Reply(conn, Observed(id=rid, session_id=st.header.session_id, step=st.step)))
        out.append(Publish(st.header.session_id, event, exclude=conn))
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
            session_id=st.header.session_id,
            step=step,
            action=msg.action,
            thought=msg.thought,
            source=msg.source,
        )
        return [
            ActionRecord(event, self.clock()),
            Reply(conn, ActionRecorded(id=msg.id, session_id=st.header.session_id, step=step)),
            Publish(st.header.session_id, event, exclude=conn),
            *(
                Publish(st.header.session_id, sig)
                for sig in self.signals.action(
                    st.header.session_id,
                    step,
                    msg.action,
                    msg.thought,
                    st.header.agent,
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
        sid = st.header.session_id
        out: list[Effect] = [
            LabelRecord(msg, by, self.clock()),
            Reply(conn, LabelRecorded(id=msg.id, session_id=sid, step=msg.step)),
        ]
        if msg.source == "replay" and all(x == "no" for x in msg.items):
            proof = msg.note or "replays from this step lost"
            signal = Signal(
                session_id=sid, step=msg.step, kind="proven_bad_step", action=msg.action,
                ok=False, detail=proof,
            )  # fmt: skip
            out.append(Publish(sid, signal))
        return out

    def tree_node(self, conn: int, msg: rq.TreeNode) -> list[Effect]:
        """One node of the session's search tree, new or updated: checked against the nodes
        already reported (one root; a known parent one level up; parent, depth and action
        never change; a scored action was a candidate at its step), then recorded and sent
        to the session's subscribers. A node being expanded sets the judge's trajectory to
        the path reaching it (the actions of branches the search left are not in it)."""
        st = self.get(msg.session_id)
        first = check_tree_node(st, msg)
        known = st.tree.get(msg.node)
        st.tree[msg.node] = first
        if known is None:
            st.tree_thoughts[msg.node] = msg.thought or ""
        if msg.event == "expanded":  # its children are scored next, from its page
            st.history = st.tree_path(msg.node)
        fields = msg.model_dump(exclude={"type", "id", "session_id"})
        event = TreeNodeEvent(session_id=st.header.session_id, **fields)
        return [
            TreeNodeRecord(event, self.clock()),
            Reply(
                conn, TreeNodeRecorded(id=msg.id, session_id=st.header.session_id, node=msg.node)
            ),
            Publish(st.header.session_id, event, exclude=conn),
        ]

    def end(self, conn: int, msg: rq.SessionEnd) -> list[Effect]:
        st = self.get(msg.session_id)
        ended_at = self.clock()
        st.end(msg.outcome, msg.answer, ended_at)
        self.signals.forget(st.header.session_id)
        event = SessionEnded(
            session_id=st.header.session_id, outcome=msg.outcome, answer=msg.answer
        )
        return [
            SessionEndedRecord(event, ended_at),
            *reply_and_publish(conn, msg.id, st.header.session_id, event),
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
        judged = StepInput(
            intent=st.header.intent,
            current_url=st.url,
            axtree=st.axtree,
            checklist=st.checklist,  # None: the job waits for it (checklists.py)
            history=tuple(st.history),
            candidates=tuple(msg.candidates),
            samples=msg.samples or self.default_samples,
            screenshot=st.screenshot,
            screenshot_mime=st.screenshot_mime,
        )
        job = RunScore(
            st.header.session_id,
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
        return out + self.checklists.score(st, job)

    # -- scoring (scoring.py), paused requests (commits.py), decisions (decisions.py) --
    def score_done(self, job: RunScore, result: StepScore, timing: Timing) -> list[Effect]:
        """A score job's result: the ``scored`` reply, or a step held for a person."""
        return self.scoring.done(job, result, timing)

    def set_mode(self, conn: int, by: str, msg: rq.SessionMode) -> list[Effect]:
        """A paired person sets the session's mode."""
        return self.commits.set_mode(conn, by, msg)

    def commit_check(self, conn: int, msg: rq.CommitCheck, *, approver: str | None) -> list[Effect]:
        """A request the browser paused, decided by the session's mode."""
        return self.commits.check(conn, msg, approver=approver)

    def decide(self, conn: int, by: str, msg: rq.ApprovalDecide) -> list[Effect]:
        """A person's decision on an open approval request."""
        return self.decisions.decide(conn, by, msg)

    def close_orphaned_approvals(self, open_: list[tuple[str, str]]) -> list[Effect]:
        """Approval requests a restart left open, closed as ``timeout``."""
        return self.decisions.close_orphaned(open_)

    def expire(self, request_id: str) -> list[Effect]:
        """An approval request nobody decided in time."""
        return self.decisions.expire(request_id)

    def asked_by(self, conn: int) -> set[str]:
        """The sessions in which connection ``conn`` is asking about a paused request."""
        return {c.session_id for c in self.commits.pending.values() if c.conn == conn}

    def asker_gone(self, conn: int, session_id: str) -> list[Effect]:
        """Connection ``conn`` closed: its paused requests in ``session_id`` are refused."""
        return self.decisions.asker_gone(conn, session_id)


def _decode_screenshot(shot: Screenshot | None) -> bytes | None:
    if shot is None or shot.data is None:
        return None
    try:
        return base64.b64decode(shot.data, validate=True)
    except (binascii.Error, ValueError):
        raise ProtocolError("screenshot.data: not valid base64") from None
