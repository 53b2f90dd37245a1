"""A recorded session read back step by step (typed): what reports and offline tools show."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict, cast

from webshepherd.protocol.agreement import Decided, PersonDecision, by_person
from webshepherd.protocol.common import (
    Candidate,
    CandidateResult,
    GuardHit,
    ItemProbs,
    SampleResult,
    ScoredCandidate,
    SessionSummary,
    TreeNodeFields,
    UnparsedReason,
)
from webshepherd.protocol.replies import Checklist


@dataclass
class Scoring:
    """One ``score`` request of a step and what came of it: each candidate as the wire types
    hold it (:class:`ScoredCandidate`), every field of its result as the ``scored`` reply
    carried it (a recording made before ``candidate_judging`` reads ``unparsed_samples``,
    ``judge_inputs`` and a sample's ``unparsed`` reason as the wire model's defaults)."""

    request_id: str
    best: int | None
    decision: dict[str, Any] | None  # the scored reply's DecisionInfo, once known
    candidates: list[ScoredCandidate]
    queue_ms: float | None
    model_ms: float | None
    created_at: float


@dataclass
class Approval:
    """A held step's approval request and how it ended (``decision`` None while open)."""

    request_id: str
    candidate_index: int
    reward: float | None
    reason: str
    feedback: str
    decision: str | None
    status: str | None
    action: str | None
    decided_by: str | None
    note: str | None
    created_at: float
    decided_at: float | None
    threshold: float | None = None  # the approval threshold in force when it was held

    @property
    def by_person(self) -> bool:
        """A person's approve, reject or edit: ground truth (docs/training.md); a timeout or
        anything the daemon decided is not."""
        return by_person(self.decision, self.decided_by)

    # the guard rules that held it (sessions/guards.py; none in a recording made before guards)
    guard: list[GuardHit] = field(default_factory=list)


@dataclass
class Executed:
    action: str
    thought: str | None
    source: str
    created_at: float
    step: int = 0


@dataclass
class TruthLabel:
    """Ground truth for one candidate: each checklist item's label after its action, and who
    knew it (``environment`` or ``person``)."""

    action: str
    items: list[str]  # yes / in_progress / no, in the checklist's order
    source: str
    by: str
    note: str | None
    created_at: float


@dataclass
class RecordedTree:
    """A session's search tree as recorded (``tree.node``): every node as its latest update
    left it (the wire's :class:`TreeNodeFields`, in node order), the path the search returned
    (node ids, root first; empty while it runs or when it never said), and per node how many
    updates it had and when the latest was recorded. The search's own tree, with its budgets
    and stop, is ``protocol.agents.SearchTree``."""

    nodes: list[TreeNodeFields] = field(default_factory=list)
    path: list[int] = field(default_factory=list)
    updates: dict[int, int] = field(default_factory=dict)  # node -> updates recorded
    updated_at: dict[int, float] = field(default_factory=dict)  # node -> the latest's time

    def node(self, node_id: int) -> TreeNodeFields | None:
        return next((n for n in self.nodes if n.node == node_id), None)

    def children(self, node_id: int) -> list[TreeNodeFields]:
        return [n for n in self.nodes if n.parent == node_id]


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

    _read_observations(db, sid, at)
    _read_scorings(db, sid, at)
    _read_approvals(db, sid, at)
    actions = _read_actions(db, sid, at)
    _read_signals(db, sid, at)
    _read_labels(db, sid, at)
    sess = db.execute("SELECT answer FROM sessions WHERE session_id = ?", (sid,)).fetchone()
    try:
        scorer = db.execute(
            "SELECT model, backend FROM session_scorers WHERE session_id = ?", (sid,)
        ).fetchone()
    except sqlite3.OperationalError:  # a recording made before scorers were kept
        scorer = None
    try:
        kept = db.execute(
            "SELECT settings FROM session_scorer_settings WHERE session_id = ?", (sid,)
        ).fetchone()
    except sqlite3.OperationalError:  # a recording made before settings were kept
        kept = None
    return Timeline(
        summary,
        checklist,
        sess["answer"] if sess else None,
        scorer["model"] if scorer else None,
        scorer["backend"] if scorer else None,
        [steps[k] for k in sorted(steps)],
        actions,
        json.loads(kept["settings"]) if kept else {},
        _read_tree(db, sid),
    )


def _read_observations(db: sqlite3.Connection, sid: str, at: Callable[[int], Step]) -> None:
    try:
        boxes = {
            r["observation_id"]: json.loads(r["boxes"])
            for r in db.execute(
                "SELECT b.observation_id, b.boxes FROM observation_boxes b JOIN observations o "
                "ON o.id = b.observation_id WHERE o.session_id = ?",
                (sid,),
            )
        }
    except sqlite3.OperationalError:  # a recording made before boxes were kept
        boxes = {}
    for o in db.execute(
        "SELECT id, step, url, axtree, screenshot_mime, screenshot, created_at FROM observations "
        "WHERE session_id = ? ORDER BY id",
        (sid,),
    ):
        s = at(o["step"])
        s.url, s.axtree, s.observed_at = o["url"], o["axtree"], o["created_at"]
        s.screenshot, s.screenshot_mime = o["screenshot"], o["screenshot_mime"]
        s.boxes = boxes.get(o["id"])


def _read_scorings(db: sqlite3.Connection, sid: str, at: Callable[[int], Step]) -> None:
    """Each score request with its candidates and their samples. Built with
    ``model_construct``: what was recorded was validated on the way in, and reading it back
    checks nothing again (an old recording reads as it was written)."""
    judging = _read_judging(db, sid)
    samples: dict[tuple[int, int], list[SampleResult]] = defaultdict(list)
    for t in db.execute(
        "SELECT t.score_id, t.candidate, t.sample, t.text, t.reward, t.items FROM samples t "
        "JOIN score_requests r ON t.score_id = r.id WHERE r.session_id = ? "
        "ORDER BY t.score_id, t.candidate, t.sample",
        (sid,),
    ):
        key = (t["score_id"], t["candidate"])
        reasons = judging[key][2] if key in judging else []
        reason = reasons[t["sample"]] if t["sample"] < len(reasons) else None
        samples[key].append(
            SampleResult.model_construct(
                reward=t["reward"],
                text=t["text"],
                items=read_items(t["items"]),
                **({"unparsed": reason} if reason is not None else {}),
            )
        )
    cands: dict[int, list[ScoredCandidate]] = defaultdict(list)
    for c in db.execute(
        "SELECT c.* FROM candidate_results c JOIN score_requests r ON c.score_id = r.id "
        "WHERE r.session_id = ? ORDER BY c.score_id, c.idx",
        (sid,),
    ):
        cands[c["score_id"]].append(
            ScoredCandidate(
                Candidate.model_construct(thought=c["thought"], action=c["action"]),
                CandidateResult.model_construct(
                    index=c["idx"],
                    reward=c["reward"],
                    items=read_items(c["items"]),
                    feedback=c["feedback"],
                    samples=samples.get((c["score_id"], c["idx"]), []),
                    parsed_samples=c["parsed_samples"],
                    probabilities=c["probabilities"],
                    **_judged(judging.get((c["score_id"], c["idx"]))),
                ),
            )
        )
    for r in db.execute("SELECT * FROM score_requests WHERE session_id = ? ORDER BY id", (sid,)):
        at(r["step"]).scorings.append(
            Scoring(
                r["request_id"],
                r["best"],
                json.loads(r["decision"]) if r["decision"] else None,
                cands.get(r["id"], []),
                r["queue_ms"],
                r["model_ms"],
                r["created_at"],
            )
        )


Judging = tuple[int, str, list[UnparsedReason | None]]
"""A ``candidate_judging`` row: unparsed samples, judge inputs, each sample's unparsed reason."""


def _read_judging(db: sqlite3.Connection, sid: str) -> dict[tuple[int, int], Judging]:
    """The ``candidate_judging`` rows of a session by (score id, candidate index)."""
    try:
        rows = db.execute(
            "SELECT j.* FROM candidate_judging j JOIN score_requests r ON j.score_id = r.id "
            "WHERE r.session_id = ?",
            (sid,),
        ).fetchall()
    except sqlite3.OperationalError:  # a recording made before it was kept
        return {}
    return {
        (j["score_id"], j["idx"]): (
            j["unparsed_samples"],
            j["judge_inputs"],
            json.loads(j["unparsed"]),
        )
        for j in rows
    }


class _Judged(TypedDict, total=False):
    """The fields of a candidate result its ``candidate_judging`` row gives."""

    unparsed_samples: int
    judge_inputs: str


def _judged(row: Judging | None) -> _Judged:
    """A candidate result's fields from its ``candidate_judging`` row (none: the defaults)."""
    return {} if row is None else {"unparsed_samples": row[0], "judge_inputs": row[1]}


def read_items(text: str) -> list[ItemProbs]:
    """An ``items`` column of ``candidate_results`` or ``samples``."""
    return [ItemProbs.model_validate(i) for i in json.loads(text)]


def _read_approvals(db: sqlite3.Connection, sid: str, at: Callable[[int], Step]) -> None:
    """The approvals table, with each request's threshold from its recorded event."""
    thresholds: dict[str, float | None] = {}
    for e in db.execute(
        "SELECT body FROM events WHERE session_id = ? AND type = 'approval.request'", (sid,)
    ):
        body = json.loads(e["body"])
        got = body.get("threshold")
        thresholds[str(body.get("request_id"))] = float(got) if got is not None else None
    for a in db.execute("SELECT * FROM approvals WHERE session_id = ? ORDER BY created_at", (sid,)):
        at(a["step"]).approvals.append(
            Approval(
                a["request_id"],
                a["candidate_index"],
                a["reward"],
                a["reason"],
                a["feedback"],
                a["decision"],
                a["status"],
                a["action"],
                a["decided_by"],
                a["note"],
                a["created_at"],
                a["decided_at"],
                thresholds.get(a["request_id"]),
            )
        )
    try:  # the guards' hits, by request (a recording made before guards has no such table)
        rows = db.execute(
            "SELECT g.request_id, g.hits, a.step FROM approval_guards g "
            "JOIN approvals a ON a.request_id = g.request_id WHERE a.session_id = ?",
            (sid,),
        ).fetchall()
    except sqlite3.OperationalError:
        rows = []
    for r in rows:
        for approval in at(r["step"]).approvals:
            if approval.request_id == r["request_id"]:
                approval.guard = [GuardHit.model_validate(h) for h in json.loads(r["hits"])]


def _read_actions(db: sqlite3.Connection, sid: str, at: Callable[[int], Step]) -> list[Executed]:
    """The executed actions, each in its step and all in recording order."""
    actions: list[Executed] = []
    for x in db.execute("SELECT * FROM actions WHERE session_id = ? ORDER BY id", (sid,)):
        actions.append(Executed(x["action"], x["thought"], x["source"], x["created_at"], x["step"]))
        at(x["step"]).executed.append(actions[-1])
    return actions


def _read_signals(db: sqlite3.Connection, sid: str, at: Callable[[int], Step]) -> None:
    for e in db.execute(
        "SELECT body FROM events WHERE session_id = ? AND type = 'signal' ORDER BY seq", (sid,)
    ):
        body = json.loads(e["body"])
        at(int(body.get("step", 0))).signals.append(body)


def _read_labels(db: sqlite3.Connection, sid: str, at: Callable[[int], Step]) -> None:
    try:
        rows = db.execute("SELECT * FROM labels WHERE session_id = ? ORDER BY id", (sid,))
    except sqlite3.OperationalError:  # a recording made before labels were kept
        return
    for r in rows:
        at(r["step"]).labels.append(
            TruthLabel(
                r["action"],
                json.loads(r["items"]),
                r["source"],
                r["labelled_by"],
                r["note"],
                r["created_at"],
            )
        )


def _read_tree(db: sqlite3.Connection, sid: str) -> RecordedTree | None:
    """Every node's latest update, and the path of the latest ``path`` updates (root first);
    None when the session has no tree."""
    try:
        rows = db.execute("SELECT * FROM tree_nodes WHERE session_id = ? ORDER BY id", (sid,))
    except sqlite3.OperationalError:  # a recording made before trees were kept
        return None
    tree = RecordedTree()
    nodes: dict[int, TreeNodeFields] = {}
    path: dict[int, int] = {}  # depth -> node of the path
    for r in rows:
        n = nodes[r["node"]] = TreeNodeFields.model_validate(
            {k: r[k] for k in TreeNodeFields.model_fields}
        )
        tree.updates[n.node] = tree.updates.get(n.node, 0) + 1
        tree.updated_at[n.node] = r["created_at"]
        if n.event == "path":
            if n.depth == 0:
                path.clear()  # a new path starts at the root
            path[n.depth] = n.node
    if not nodes:
        return None
    tree.nodes = [nodes[k] for k in sorted(nodes)]
    tree.path = [path[d] for d in sorted(path)]
    return tree
