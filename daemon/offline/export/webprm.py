"""Recorded sessions → rows in the WebPRM Collection preference-pair schema (the SFT rows are
llamafactory.py's).

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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from webshepherd.daemon.browser.actions import read_recorded
from webshepherd.daemon.offline.export.negatives import is_negative
from webshepherd.daemon.offline.export.redact import Redactor, mask_password_lines
from webshepherd.daemon.offline.export.sessions import Summary, redacted_sessions
from webshepherd.daemon.offline.export.siblings import (
    beaten,
    labelled,
    tree_steps,
    truth_chosen,
)
from webshepherd.daemon.recorder import History
from webshepherd.daemon.recorder.timeline import Timeline
from webshepherd.protocol.common import Candidate, ScoredCandidate, SessionSummary, Turn

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
    for s, tl, red in redacted_sessions(history, sessions, redact):
        sid = s.session_id
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
