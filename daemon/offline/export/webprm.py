"""Recorded sessions → rows in the WebPRM Collection preference-pair schema (the SFT rows are
llamafactory.py's).

A row pairs a step's chosen action with its rejected ones, both from truth only (truth.py: a
person's decisions, labels, the env's outcome; the judge only when asked with
``include_judged``, and then marked ``judge``). Each side says where its truth came from
(``chosen_source``, ``rejected_source``). The checklist columns hold the task's own checklist
(a reference one); a checklist the judge wrote is left out unless asked
(``generated_checklists``), and ``checklist_source`` says which was written.

A tree search's step (siblings.py) reads its trajectory from the tree's path.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from webshepherd.daemon.browser.actions import read_recorded
from webshepherd.daemon.offline.export.redact import Redactor, mask_password_lines
from webshepherd.daemon.offline.export.sessions import Summary, redacted_sessions
from webshepherd.daemon.offline.export.siblings import tree_steps
from webshepherd.daemon.offline.export.truth import StepTruth, Truth, candidates, step_truth
from webshepherd.daemon.recorder import History
from webshepherd.daemon.recorder.timeline import Timeline
from webshepherd.protocol.common import ScoredCandidate, SessionSummary, Turn

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
    "chosen_source",
    "rejected_source",
    "checklist_source",
)
MAX_REJECTED = 5
_EXT = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp"}


@dataclass
class StepRecord:
    """Everything recorded about one scored step of a session (before redaction), with its
    truth and the checklist an export may write (the task's own, or a generated one asked
    for: ``checklist_source``; none: empty and None)."""

    session: SessionSummary
    step: int
    url: str
    axtree: str
    screenshot: bytes | None
    screenshot_mime: str | None
    history: list[Turn]
    candidates: list[ScoredCandidate]  # one per action (of a re-scored step: the latest)
    truth: StepTruth
    checklist_text: str
    checklist_items: list[str]
    checklist_source: str | None
    node: int | None = None  # a tree search's step: the node it expanded
    children: dict[str, int] = field(default_factory=dict)  # and its candidates' nodes

    @property
    def chosen(self) -> Truth | None:
        return self.truth.chosen

    @property
    def rejected(self) -> list[Truth]:
        """The rejected candidates a row pairs (most trusted first, at most MAX_REJECTED)."""
        return self.truth.rejected[:MAX_REJECTED]


def _steps(
    tl: Timeline, include_judged: bool = False, generated_checklists: bool = False
) -> Iterator[StepRecord]:
    s = tl.summary
    cl = tl.checklist
    if cl is not None and (cl.source == "reference" or generated_checklists):
        cl_text, cl_items, cl_source = cl.text, [i.title for i in cl.items], str(cl.source)
    else:
        cl_text, cl_items, cl_source = "", [], None
    n_items = len(cl.items) if cl is not None else 0
    tree = tree_steps(tl)
    last = tl.actions[-1].step if tl.actions else None
    for st in tl.steps:
        if not st.scorings or st.observed_at is None:
            continue
        at = tree.get(st.step)
        truth = step_truth(
            st,
            s.outcome,
            n_items,
            tree=at,
            ended_here=st.step == last,
            include_judged=include_judged,
        )
        if at is not None:
            history = list(at.history)
        else:
            history = [Turn(x.thought or "", x.action) for x in tl.actions if x.step < st.step]
        yield StepRecord(
            s,
            st.step,
            st.url,
            st.axtree,
            st.screenshot,
            st.screenshot_mime,
            history,
            list(candidates(st).values()),
            truth,
            cl_text,
            cl_items,
            cl_source,
            at.node if at is not None else None,
            dict(at.children) if at is not None else {},
        )


def _turn(red: Redactor, t: Truth, axtree: str) -> dict[str, str]:
    return {"thought": red.text(t.thought), "action": red.action(t.action, axtree)}


def step_records(
    history: History,
    sessions: Sequence[SessionSummary],
    redact: Sequence[str],
    progress: Callable[[int], None] | None,
    summ: Summary,
    include_judged: bool = False,
    generated_checklists: bool = False,
) -> Iterator[tuple[SessionSummary, Redactor, StepRecord]]:
    """Every scored step of the sessions with its truth, each with its session and the
    session's redactor; each counts in ``progress``, and one with an action that could not be
    read in ``summ.unparsed_actions``."""
    for s, tl, red in redacted_sessions(history, sessions, redact):
        sid = s.session_id
        summ.per_session[sid] = 0
        for rec in _steps(tl, include_judged, generated_checklists):
            if progress:
                progress(1)
            texts = [t.action for t in rec.history] + [c.candidate.action for c in rec.candidates]
            if rec.chosen is not None:
                texts.append(rec.chosen.action)
            if not all(read_recorded(a).parsed for a in texts):
                summ.unparsed_actions.append({"task_id": sid, "step_id": rec.step})
            yield s, red, rec


def trusted_steps(
    history: History,
    sessions: Sequence[SessionSummary],
    redact: Sequence[str],
    progress: Callable[[int], None] | None,
    summ: Summary,
    include_judged: bool = False,
    generated_checklists: bool = False,
) -> Iterator[tuple[SessionSummary, Redactor, StepRecord, Truth]]:
    """The scored steps with a chosen action known right, each with its session, redactor
    and that action; the others count as skipped (``no_trustworthy_chosen``)."""
    for s, red, rec in step_records(
        history, sessions, redact, progress, summ, include_judged, generated_checklists
    ):
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
    include_judged: bool = False,
    generated_checklists: bool = False,
) -> Iterator[dict[str, Any]]:
    """One row per scored step with a chosen action and at least one rejected known from
    truth (truth.py; ``include_judged``: the judge's clear negatives too), in the WebPRM
    Collection's schema (writers.webprm_features): ``step_id`` a string,
    ``checklist_target_list`` the items' titles as a JSON list in a string, the screenshot's
    bytes in ``image_observation`` (``path`` set only when ``image_dir`` also gets a copy);
    then ``chosen_source``, ``rejected_source`` (one per rejected) and ``checklist_source``
    (``reference``, ``generated`` when ``generated_checklists``, None: no checklist)."""
    summ = summary if summary is not None else Summary()
    steps = trusted_steps(
        history, sessions, redact, progress, summ, include_judged, generated_checklists
    )
    for s, red, rec, chosen in steps:
        sid = s.session_id
        start = s.start_url or ""
        rejected = rec.rejected
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
            "chosen_source": chosen.source,
            "rejected_source": [r.source for r in rejected],
            "checklist_source": rec.checklist_source,
        }
        summ.rows += 1
        summ.per_session[sid] += 1
        yield row
