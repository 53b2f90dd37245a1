"""Recorded sessions → rows in the WebPRM Collection preference-pair schema, and SFT rows
(targets from ground truth only: :func:`sft_rows`, docs/training.md).

The chosen action of a step, in order of trust: a person's decision on an approval
request (approved: the candidate, or the edited action), an action a person executed
(``source: human``), else the executed action of a session that ended in success.
Rejected: candidates a person rejected (or edited away), plus lower-scored candidates
that the rule-based negative filter (negatives.py) calls clear negatives. Only a person's
decision counts (``Approval.by_person``): a timeout, or whatever the daemon decided with
nobody there, is no preference (docs/training.md, "A person's decisions").

A tree search's step (siblings.py) reads its trajectory from the tree's path, trusts the
sibling the search kept (on its returned path, in a successful session) instead of the last
one run there, and lets ground truth decide among labelled siblings: the one truth puts first
is chosen (after a person's own choice), those it beats are rejected; the judge's rewards
never decide a pair.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlparse

from webshepherd.daemon.browser.actions import read_recorded
from webshepherd.daemon.engine.prompts import (
    checklist_messages,
    format_trajectory,
    judge_messages,
)
from webshepherd.daemon.offline.export.negatives import is_negative
from webshepherd.daemon.offline.export.redact import Redactor, mask_password_lines
from webshepherd.daemon.offline.export.siblings import (
    beaten,
    labelled,
    path_done,
    tree_steps,
    truth_chosen,
)
from webshepherd.daemon.offline.training.targets import (
    Label,
    checklist_target,
    feedback,
    judge_target,
)
from webshepherd.daemon.recorder import History
from webshepherd.daemon.recorder.timeline import Step, Timeline
from webshepherd.protocol.common import Candidate, ScoredCandidate, SessionSummary, Turn
from webshepherd.protocol.errors import WebShepherdError

WEBPRM_COLUMNS = (
    "task_id",
    "step_id",
    "intent",
    "website_name",
    "start_url",
    "thought_history",
    "action_history",
    "current_url",
    "text_observation",
    "image_observation",
    "checklist",
    "checklist_target_list",
    "chosen",
    "rejected",
)
MAX_REJECTED = 5
_EXT = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp"}


@dataclass
class Summary:
    rows: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    per_session: dict[str, int] = field(default_factory=dict)
    images: int = 0
    unparsed_actions: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "unparsed_actions": self.unparsed_actions,
            "rows": self.rows,
            "skipped": sum(self.skipped.values()),
            "skipped_by_reason": dict(self.skipped),
            "per_session": self.per_session,
            "images": self.images,
        }


@dataclass
class StepRecord:
    """Everything recorded about one scored step of a session (before redaction)."""

    session: SessionSummary
    step: int
    url: str
    axtree: str
    screenshot: bytes | None
    screenshot_mime: str | None
    history: list[Turn]
    candidates: list[ScoredCandidate]  # one per action (of a re-scored step: the latest)
    chosen: dict[str, str] | None
    human_rejected: list[dict[str, str]]
    checklist_text: str
    checklist_items: list[str]
    # ground truth of the step's labelled candidates: action -> (item labels, source); kept
    # for a tree search's step only (siblings.py)
    truth: dict[str, tuple[list[str], str]] = field(default_factory=dict)
    node: int | None = None  # a tree search's step: the node it expanded
    children: dict[str, int] = field(default_factory=dict)  # and its candidates' nodes


def _steps(tl: Timeline) -> Iterator[StepRecord]:
    s = tl.summary
    cl_text = tl.checklist.text if tl.checklist else ""
    cl_items = [i.title for i in tl.checklist.items] if tl.checklist else []
    tree = tree_steps(tl)
    for st in tl.steps:
        if not st.scorings or st.observed_at is None:
            continue
        cands: dict[str, ScoredCandidate] = {}
        for scoring in st.scorings:
            for c in scoring.candidates:
                cands[c.candidate.action] = c  # a later scoring wins
        chosen: dict[str, str] | None = None
        rejected: list[dict[str, str]] = []
        for a in st.person_decisions:
            held = st.decided(a)
            if held is None:
                continue
            approved = held.candidate
            if a.decision == "approve":
                chosen = {"thought": approved.thought, "action": a.action or approved.action}
            elif a.decision == "edit" and a.action:
                chosen = {"thought": approved.thought, "action": a.action}
                rejected.append({"thought": approved.thought, "action": approved.action})
            elif a.decision == "reject":
                rejected.append({"thought": approved.thought, "action": approved.action})
        executed = st.executed
        human = [x for x in executed if x.source == "human"]
        if chosen is None and human:
            chosen = {"thought": human[-1].thought or "", "action": human[-1].action}
        at = tree.get(st.step)
        truth = labelled(st, cands, len(cl_items)) if at is not None and cl_items else {}
        if at is not None:  # a tree search's siblings: truth first, then the kept one
            picked = truth_chosen(truth, at.kept) if chosen is None else None
            if chosen is None and picked is None and s.outcome == "success":
                picked = at.kept
            if picked is not None and picked in cands:
                chosen = {"thought": cands[picked].candidate.thought, "action": picked}
            history = list(at.history)
        else:
            if chosen is None and executed and s.outcome == "success":
                chosen = {"thought": executed[-1].thought or "", "action": executed[-1].action}
            history = [Turn(x.thought or "", x.action) for x in tl.actions if x.step < st.step]
        yield StepRecord(
            s,
            st.step,
            st.url,
            st.axtree,
            st.screenshot,
            st.screenshot_mime,
            history,
            list(cands.values()),
            chosen,
            rejected,
            cl_text,
            cl_items,
            truth,
            at.node if at is not None else None,
            dict(at.children) if at is not None else {},
        )


def pick_rejected(rec: StepRecord) -> list[dict[str, str]]:
    """Human-rejected candidates first; then, when the chosen action has ground truth (a tree
    search's labelled siblings), the labelled candidates truth puts below it, furthest behind
    first; then clear negatives scored below the chosen action (every clear negative when the
    chosen action was not scored), lowest reward first, leaving out labelled candidates when
    truth decided. Each carries ``why``: ``person``, the truth's source (``environment`` or
    ``person``), or ``negative`` (the rule-based filter)."""
    assert rec.chosen is not None
    chosen = rec.chosen["action"]
    out = [{**r, "why": "person"} for r in rec.human_rejected if r["action"] != chosen]
    seen = {r["action"] for r in out} | {chosen}
    thoughts = {c.candidate.action: c.candidate.thought for c in rec.candidates}
    for action, source in beaten(rec.truth, chosen):
        if action not in seen:
            out.append({"thought": thoughts.get(action, ""), "action": action, "why": source})
            seen.add(action)
    if chosen in rec.truth:
        seen |= set(rec.truth)  # truth decided the labelled ones
    chosen_reward = next(
        (c.result.reward for c in rec.candidates if c.candidate.action == chosen), None
    )
    pool: list[tuple[Candidate, float | None]] = []
    for c in rec.candidates:
        action, reward = c.candidate.action, c.result.reward
        if action in seen or not is_negative(chosen, action):
            continue
        if chosen_reward is not None and reward is not None and reward >= chosen_reward:
            continue  # scored at least as high as the chosen action: not "lower-scored"
        pool.append((c.candidate, reward))
    pool.sort(key=lambda p: (p[1] is not None, p[1] if p[1] is not None else 0.0))
    out += [{"thought": c.thought, "action": c.action, "why": "negative"} for c, _ in pool]
    return out[:MAX_REJECTED]


def _learn(red: Redactor, tl: Timeline) -> None:
    """Teach the redactor the values typed into password fields anywhere in the session:
    executed, scored and approved actions, each with the page of its step."""
    pages = {st.step: st.axtree for st in tl.steps}
    acts = [(x.action, pages.get(x.step, "")) for x in tl.actions]
    acts += [
        (c.candidate.action, st.axtree)
        for st in tl.steps
        for sc in st.scorings
        for c in sc.candidates
    ]
    acts += [(a.action, st.axtree) for st in tl.steps for a in st.approvals if a.action is not None]
    red.learn_passwords(acts)


def _turn(red: Redactor, d: dict[str, str], axtree: str) -> dict[str, str]:
    return {"thought": red.text(d.get("thought") or ""), "action": red.action(d["action"], axtree)}


def _trusted_steps(
    history: History,
    sessions: Sequence[SessionSummary],
    redact: Sequence[str],
    progress: Callable[[int], None] | None,
    summ: Summary,
) -> Iterator[tuple[SessionSummary, Redactor, StepRecord, dict[str, str]]]:
    """The scored steps with a trustworthy chosen action, each with its session, the
    session's redactor and the chosen action; every step counts in ``progress``, the others
    as skipped."""
    for s in sessions:
        sid = s.session_id
        tl = history.timeline(sid)
        if tl is None:
            raise WebShepherdError(f"no recorded session {sid}")
        red = Redactor(redact)
        _learn(red, tl)
        summ.per_session[sid] = 0
        for rec in _steps(tl):
            if progress:
                progress(1)
            texts = [t.action for t in rec.history] + [c.candidate.action for c in rec.candidates]
            if rec.chosen is not None:
                texts.append(rec.chosen["action"])
            if not all(read_recorded(a).parsed for a in texts):
                summ.unparsed_actions.append({"task_id": sid, "step_id": rec.step})
            if rec.chosen is None:
                summ.skipped["no_trustworthy_chosen"] += 1
                continue
            yield s, red, rec, rec.chosen


def webprm_rows(
    history: History,
    sessions: Sequence[SessionSummary],
    redact: Sequence[str] = (),
    image_dir: Path | None = None,
    image_ref: Callable[[Path], str] = str,
    progress: Callable[[int], None] | None = None,
    summary: Summary | None = None,
) -> Iterator[dict[str, Any]]:
    """One row per scored step with a trustworthy chosen action and at least one rejected,
    in the WebPRM Collection's schema (writers.webprm_features): ``step_id`` a string,
    ``checklist_target_list`` the items' titles as a JSON list in a string, the screenshot's
    bytes in ``image_observation`` (``path`` set only when ``image_dir`` also gets a copy)."""
    summ = summary if summary is not None else Summary()
    for s, red, rec, chosen in _trusted_steps(history, sessions, redact, progress, summ):
        sid = s.session_id
        start = s.start_url or ""
        rejected = pick_rejected(rec)
        if not rejected:
            summ.skipped["no_rejected"] += 1
            continue
        image = None
        if rec.screenshot:
            path = None
            if image_dir is not None:
                ext = _EXT.get(rec.screenshot_mime or "", "png")
                file = image_dir / sid / f"{rec.step}.{ext}"
                file.parent.mkdir(parents=True, exist_ok=True)
                file.write_bytes(rec.screenshot)
                path = image_ref(file)
            image = {"bytes": rec.screenshot, "path": path}
            summ.images += 1
        tree = red.text(mask_password_lines(rec.axtree))
        row = {
            "task_id": sid,
            "step_id": str(rec.step),
            "intent": red.text(s.intent),
            "website_name": red.text(urlparse(start or rec.url).hostname or ""),
            "start_url": red.text(start),
            "thought_history": [red.text(t.thought) for t in rec.history],
            "action_history": [red.action(t.action, "") for t in rec.history],
            "current_url": red.text(rec.url),
            "text_observation": tree,
            "image_observation": image,
            "checklist": red.text(rec.checklist_text),
            "checklist_target_list": json.dumps(
                [red.text(t) for t in rec.checklist_items], ensure_ascii=False
            ),
            "chosen": _turn(red, chosen, rec.axtree),
            "rejected": [_turn(red, r, rec.axtree) for r in rejected],
        }
        summ.rows += 1
        summ.per_session[sid] += 1
        yield row


def _truth(
    st: Step, cands: dict[str, ScoredCandidate], done_before: Sequence[bool]
) -> dict[str, tuple[list[Label], str]]:
    """Each candidate of ``st`` with ground truth: its item labels and their source. A
    person's labels beat the environment's (the later of one source wins). A person's
    approve, reject or edit gives no labels: it says which action should run, not where each
    item stands (a rejected "Place order" would complete its item), so it makes preference
    pairs (:func:`pick_rejected`), never a judgement target."""
    return {
        a: (cast(list[Label], labels), source)
        for a, (labels, source) in labelled(st, cands, len(done_before)).items()
    }


def sft_rows(
    history: History,
    sessions: Sequence[SessionSummary],
    redact: Sequence[str] = (),
    layout: str = "sharegpt",
    history_steps: int = 10,
    progress: Callable[[int], None] | None = None,
    summary: Summary | None = None,
) -> Iterator[dict[str, Any]]:
    """Instruction-tuning rows with targets from ground truth only (docs/training.md), never
    from the judge's recorded output: per session, the checklist prompt with the reference
    checklist a user gave as target (none for a generated one), and per scored candidate
    with truth (:func:`_truth`) the judge prompt it was scored with and as target the
    judgement written from its labels (``targets.judge_target``). A candidate without truth
    gives no row (``skipped_by_reason``: ``no_ground_truth``). ``label`` says where the
    truth came from: ``reference``, ``environment``, ``person``. At a
    tree search's step the trajectory is the tree's path to it, and what was done before it
    the truth of the nearest labelled action on that path (siblings.py)."""
    summ = summary if summary is not None else Summary()
    for s in sessions:
        sid = s.session_id
        tl = history.timeline(sid)
        if tl is None:
            raise WebShepherdError(f"no recorded session {sid}")
        red = Redactor(redact)
        _learn(red, tl)
        summ.per_session[sid] = 0
        cl_text = tl.checklist.text if tl.checklist else ""
        n_items = len(tl.checklist.items) if tl.checklist else 0
        first = next((st for st in tl.steps if st.observed_at is not None), None)
        if tl.checklist is not None and tl.checklist.source == "reference" and first is not None:
            msgs = checklist_messages(
                red.text(s.intent),
                red.text(s.start_url or first.url),
                red.text(mask_password_lines(first.axtree)),
            )
            titles = [red.text(i.title) for i in tl.checklist.items]
            target = checklist_target(red.text(cl_text), titles)
            yield _layout(layout, msgs, target, sid, 0, "reference")
            summ.rows += 1
            summ.per_session[sid] += 1
        elif tl.checklist is not None:
            summ.skipped["generated_checklist"] += 1
        done_before = [False] * n_items
        tree = tree_steps(tl)
        for st in tl.steps:
            if not st.scorings or st.observed_at is None:
                continue
            if progress:
                progress(1)
            cands: dict[str, ScoredCandidate] = {}
            for scoring in st.scorings:
                for c in scoring.candidates:
                    cands[c.candidate.action] = c  # a later one wins
            at = tree.get(st.step)
            if at is not None:
                done_before = path_done(tl, at, n_items)
            truth = _truth(st, cands, done_before) if n_items else {}
            if len(truth) < len(cands):
                summ.skipped["no_ground_truth"] += len(cands) - len(truth)
            if at is not None:
                path = [(t.thought, t.action) for t in at.history]
            else:
                path = [(x.thought or "", x.action) for x in tl.actions if x.step < st.step]
            hist = [Turn(red.text(t), red.action(a, "")) for t, a in path]
            for action, (labels, source) in truth.items():
                if not read_recorded(action).parsed:
                    summ.unparsed_actions.append({"task_id": sid, "step_id": st.step})
                msgs = judge_messages(
                    intent=red.text(s.intent),
                    trajectory=format_trajectory(hist, history_steps),
                    current_url=red.text(st.url),
                    text_observation=red.text(mask_password_lines(st.axtree)),
                    checklist=red.text(cl_text),
                    thought=red.text(cands[action].candidate.thought or ""),
                    action=red.action(action, st.axtree),
                )
                target = judge_target(labels, feedback(labels, done_before))
                yield _layout(layout, msgs, target, sid, st.step, source)
                summ.rows += 1
                summ.per_session[sid] += 1
            executed = st.executed[-1].action if st.executed else None
            if executed in truth:  # what the executed action completed stays known as done
                done_before = [lab == "yes" for lab in truth[executed][0]]


def _layout(
    layout: str, msgs: list[dict[str, str]], target: str, sid: str, step: int, label: str
) -> dict[str, Any]:
    system = "\n\n".join(m["content"] for m in msgs if m["role"] == "system")
    user = "\n\n".join(m["content"] for m in msgs if m["role"] != "system")
    meta = {"task_id": sid, "step_id": step, "label": label}
    if layout == "alpaca":
        return {"instruction": user, "input": "", "output": target, "system": system, **meta}
    conv = [{"from": "human", "value": user}, {"from": "gpt", "value": target}]
    return {"conversations": conv, "system": system, **meta}
