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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
    TreeNodeRecord,
)
from webshepherd.daemon.sessions import convert
from webshepherd.daemon.sessions.approvals import (
    ApprovalBook,
    ApprovalPolicy,
    Resolution,
    approval_reason,
)
from webshepherd.daemon.sessions.cards import approval_card
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
from webshepherd.daemon.sessions.guards import GuardPolicy, guard_hits, session_origin
from webshepherd.daemon.sessions.signals import SignalBook
from webshepherd.daemon.sessions.state import LiveSession
from webshepherd.protocol import requests as rq
from webshepherd.protocol.common import (
    ChecklistSource,
    DecisionInfo,
    GuardHit,
    Observation,
    Screenshot,
    Timing,
    Turn,
)
from webshepherd.protocol.errors import ProtocolError, SessionClosedError, UnknownSessionError
from webshepherd.protocol.progress import item_levels
from webshepherd.protocol.replies import (
    ActionEvent,
    ActionRecorded,
    ApprovalRequest,
    ApprovalResolved,
    LabelRecorded,
    Observed,
    Scored,
    SessionEnded,
    SessionStarted,
    TreeNodeEvent,
    TreeNodeRecorded,
)

__all__ = ["PendingScore", "Scorer", "SessionCore"]


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
    ):
        self.policy = policy
        self.scorer = scorer
        self.guards = guards if guards is not None else GuardPolicy()  # on unless told
        self.default_samples = default_samples
        self.approval_timeout_s = approval_timeout_s
        self.clock = clock
        self.new_id = new_id
        self.sessions: dict[str, LiveSession] = {}
        self.approvals = ApprovalBook(approval_default)
        self._pending: dict[str, PendingScore] = {}
        self.signals = SignalBook()  # live process signals (signals.py)
        # can a person answer an approval request now? (the socket layer: an extension or a
        # monitor is connected); a score that did not ask for approval is held only then
        self.person_present: Callable[[], bool] = lambda: True

    # -- lookup ----------------------------------------------------------
    def has(self, session_id: str) -> bool:
        return session_id in self.sessions

    def restore(self, state: LiveSession) -> None:
        """Adopt a session rebuilt from the recorder (after a restart)."""
        self.sessions.setdefault(state.session_id, state)

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
        book, pending = self.approvals.snapshot(), dict(self._pending)

        def roll_back() -> None:
            st.roll_back(saved)
            self.signals.restore(session_id, track)
            self.approvals.restore(book)
            self._pending = pending

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
            sid, msg.intent, msg.start_url, msg.agent, msg.source, self.clock(), owner=conn
        )
        self.sessions[sid] = st
        st.origin = session_origin(msg.start_url)
        event = SessionStarted(
            session_id=sid,
            intent=msg.intent,
            start_url=msg.start_url,
            agent=msg.agent,
            source=msg.source,
        )
        out: list[Effect] = [SessionStartedRecord(event, st.created_at)]
        if self.scorer is not None:
            sc = self.scorer
            out.append(ScorerRecord(sid, sc.model, sc.backend, sc.settings))
        head = len(out)  # the start's own records
        observed = [] if msg.observation is None else self._observe(st, msg.observation, conn=None)
        # rows first, then the reply, then events in the order things happened
        out += [e for e in observed if isinstance(e, Record)]
        out.append(Reply(conn, SessionStarted(id=msg.id, session_id=sid)))
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
        guard, guarded = hits.get(index, []), sorted(hits)
        present = self.person_present()
        reason = approval_reason(
            job.approval,
            best_reward,
            st.previous_reward(job.step),
            self.policy,
            person_present=present,
            guarded=bool(guard),
        )
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
            decision = DecisionInfo(status="auto", index=best, action=action)
            return [score, *self._scored(job, score, best, decision, guarded)]
        cand = score.candidates[index]
        if guard and not present:
            return [score, *self._refuse(job, score, index, guard, guarded)]
        req = self.approvals.open(job.session_id, job.step, index, cand.action, guarded=bool(guard))
        self._pending[req.request_id] = PendingScore(job, score, index, guard, guarded)
        st.waiting_approvals += 1
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
            card=approval_card(
                candidates,
                results,
                index,
                axtree=job.input.axtree,
                boxes=job.boxes,
                elements=job.elements,
                screenshot=job.input.screenshot,
                screenshot_mime=job.input.screenshot_mime,
            ),
        )
        return [
            score,
            ApprovalRequestedRecord(event, self.clock()),
            Publish(job.session_id, event, to_approvers=True),
            AwaitApproval(req.request_id, self.approval_timeout_s),
        ]

    def _refuse(
        self,
        job: RunScore,
        score: ScoreRecord,
        index: int,
        guard: list[GuardHit],
        guarded: list[int],
    ) -> list[Effect]:
        """A guarded candidate with nobody connected to decide: refused at once, not held
        until a timeout whose default is the same refusal, never approved silently. Recorded
        as an approval request rejected by the daemon, so the recording keeps why."""
        rules = ", ".join(h.rule for h in guard)
        note = (
            f"guarded ({rules}): {'; '.join(h.detail for h in guard)}; no person is connected "
            "to decide, so the daemon refused it (pair the extension or the TUI to decide)"
        )[:4000]
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
            reason="guarded",
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
            status="rejected", index=index, action=None, by=res.by, note=note, guard=guard
        )
        return [
            ApprovalRequestedRecord(asked, self.clock()),
            ApprovalDecidedRecord(resolved, res.status, self.clock()),
            *self._scored(job, score, index, decision, guarded),
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
        )

    def _scored(
        self,
        job: RunScore,
        score: ScoreRecord,
        best: int | None,
        decision: DecisionInfo,
        guarded: list[int],
    ) -> list[Effect]:
        """The ``scored`` reply and event; ``guarded``: the candidates that meet a guard rule
        (an agent that runs one other than the held best, as tree search does, asks for it
        first by scoring it alone)."""
        event = Scored(
            session_id=job.session_id,
            step=job.step,
            results=score.results,
            best=best,
            decision=decision,
            timing=score.timing,
            candidates=score.candidates,
            guarded=guarded or None,
        )
        return [
            ScoreDecisionRecord(job.request_id, event),
            # the requester's reply carries no echo of the candidates (it sent them)
            *reply_and_publish(
                job.conn, job.request_id, job.session_id, event, {"candidates": None}
            ),
        ]

    # -- approvals -------------------------------------------------------
    def decide(self, conn: int, by: str, msg: rq.ApprovalDecide) -> list[Effect]:
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
        pending = self._pending.pop(res.request_id)
        st = self.sessions[res.session_id]
        st.waiting_approvals = max(0, st.waiting_approvals - 1)
        event = ApprovalResolved(
            request_id=res.request_id,
            session_id=res.session_id,
            decision=res.decision,
            action=res.action,
            by=res.by,
            note=res.note,
        )
        out: list[Effect] = [
            ApprovalDecidedRecord(event, res.status, self.clock()),
            Publish(res.session_id, event, to_approvers=True, exclude=conn),
        ]
        if conn is not None and rid is not None:
            out.append(Reply(conn, event.model_copy(update={"id": rid})))
        out.append(ApprovalClosed(res.request_id))
        decision = DecisionInfo(
            status=res.status,
            index=pending.best,
            action=res.action if res.approved else None,
            by=res.by,
            note=res.note,
            guard=pending.guard,
        )
        return out + self._scored(
            pending.job, pending.score, pending.best, decision, pending.guarded
        )


def _decode_screenshot(shot: Screenshot | None) -> bytes | None:
    if shot is None or shot.data is None:
        return None
    try:
        return base64.b64decode(shot.data, validate=True)
    except (binascii.Error, ValueError):
        raise ProtocolError("screenshot.data: not valid base64") from None
