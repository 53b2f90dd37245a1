"""Recorded sessions → rows in the WebPRM Collection preference-pair schema, and SFT rows.

The chosen action of a step, in order of trust: a person's decision on an approval
request (approved: the candidate, or the edited action), an action a person executed
(``source: human``), else the executed action of a session that ended in success.
Rejected: candidates a person rejected (or edited away), plus lower-scored candidates
that the rule-based negative filter (negatives.py) calls clear negatives.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from webshepherd.daemon.browser.actions import read_recorded
from webshepherd.daemon.engine.prompts import format_trajectory, judge_messages
from webshepherd.daemon.offline.export.negatives import is_negative
from webshepherd.daemon.offline.export.redact import Redactor, mask_password_lines
from webshepherd.protocol.common import Turn
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


def open_recording(db: Path) -> sqlite3.Connection:
    if not db.exists():
        raise WebShepherdError(f"no recording at {db} (pass --data-dir, or run the daemon first)")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    return con


def select_sessions(
    con: sqlite3.Connection, ids: Sequence[str] | None, since: float | None
) -> list[sqlite3.Row]:
    rows = con.execute("SELECT * FROM sessions ORDER BY created_at, rowid").fetchall()
    if ids:
        known = {r["session_id"] for r in rows}
        missing = [i for i in ids if i not in known]
        if missing:
            raise WebShepherdError(f"--sessions: no recorded session {', '.join(missing)}")
        rows = [r for r in rows if r["session_id"] in set(ids)]
    if since is not None:
        rows = [r for r in rows if r["created_at"] >= since]
    return rows


@dataclass
class _Cand:
    thought: str
    action: str
    reward: float | None


@dataclass
class StepRecord:
    """Everything recorded about one scored step of a session (before redaction)."""

    session: sqlite3.Row
    step: int
    url: str
    axtree: str
    screenshot: bytes | None
    screenshot_mime: str | None
    history: list[Turn]
    candidates: list[_Cand]
    chosen: dict[str, str] | None
    human_rejected: list[dict[str, str]]
    checklist_text: str
    checklist_items: list[str]
    samples: dict[str, list[tuple[str, float | None]]]  # action -> recorded judge outputs


def _steps(con: sqlite3.Connection, s: sqlite3.Row) -> Iterator[StepRecord]:
    sid = s["session_id"]
    cl = con.execute("SELECT * FROM checklists WHERE session_id = ?", (sid,)).fetchone()
    cl_text = cl["text"] if cl else ""
    cl_items = [i.get("title", "") for i in json.loads(cl["items"])] if cl else []
    actions = con.execute(
        "SELECT * FROM actions WHERE session_id = ? ORDER BY id", (sid,)
    ).fetchall()
    by_step: dict[int, list[sqlite3.Row]] = defaultdict(list)
    for sr in con.execute(
        "SELECT * FROM score_requests WHERE session_id = ? ORDER BY id", (sid,)
    ).fetchall():
        by_step[sr["step"]].append(sr)
    approvals = con.execute(
        "SELECT * FROM approvals WHERE session_id = ? ORDER BY created_at", (sid,)
    ).fetchall()
    for step in sorted(by_step):
        obs = con.execute(
            "SELECT * FROM observations WHERE session_id = ? AND step = ? ORDER BY id DESC LIMIT 1",
            (sid, step),
        ).fetchone()
        if obs is None:
            continue
        cands: dict[str, _Cand] = {}
        samples: dict[str, list[tuple[str, float | None]]] = {}
        by_index: dict[tuple[int, int], _Cand] = {}
        for sr in by_step[step]:
            for c in con.execute(
                "SELECT * FROM candidate_results WHERE score_id = ? ORDER BY idx", (sr["id"],)
            ):
                cand = _Cand(c["thought"], c["action"], c["reward"])
                cands[c["action"]] = cand  # a later scoring of the same action wins
                by_index[(sr["id"], c["idx"])] = cand
                samples[c["action"]] = [
                    (t["text"], t["reward"])
                    for t in con.execute(
                        "SELECT text, reward FROM samples WHERE score_id = ? AND candidate = ? "
                        "ORDER BY sample",
                        (sr["id"], c["idx"]),
                    )
                ]
        chosen: dict[str, str] | None = None
        rejected: list[dict[str, str]] = []
        for a in approvals:
            if a["step"] != step or a["decision"] is None:
                continue
            score_ids = [sr["id"] for sr in by_step[step]]
            approved: _Cand | None = next(
                (
                    by_index[(i, a["candidate_index"])]
                    for i in reversed(score_ids)
                    if (i, a["candidate_index"]) in by_index
                ),
                None,
            )
            if approved is None:
                continue
            cand = approved
            if a["decision"] == "approve":
                chosen = {"thought": cand.thought, "action": a["action"] or cand.action}
            elif a["decision"] == "edit" and a["action"]:
                chosen = {"thought": cand.thought, "action": a["action"]}
                rejected.append({"thought": cand.thought, "action": cand.action})
            elif a["decision"] == "reject":
                rejected.append({"thought": cand.thought, "action": cand.action})
        executed = [a for a in actions if a["step"] == step]
        human = [a for a in executed if a["source"] == "human"]
        if chosen is None and human:
            chosen = {"thought": human[-1]["thought"] or "", "action": human[-1]["action"]}
        if chosen is None and executed and s["outcome"] == "success":
            chosen = {"thought": executed[-1]["thought"] or "", "action": executed[-1]["action"]}
        history = [Turn(a["thought"] or "", a["action"]) for a in actions if a["step"] < step]
        yield StepRecord(
            s,
            step,
            obs["url"],
            obs["axtree"],
            obs["screenshot"],
            obs["screenshot_mime"],
            history,
            list(cands.values()),
            chosen,
            rejected,
            cl_text,
            cl_items,
            samples,
        )


def pick_rejected(rec: StepRecord) -> list[dict[str, str]]:
    """Human-rejected candidates first, then clear negatives scored below the chosen action
    (every clear negative when the chosen action was not scored), lowest reward first."""
    assert rec.chosen is not None
    chosen = rec.chosen["action"]
    out = [r for r in rec.human_rejected if r["action"] != chosen]
    seen = {r["action"] for r in out} | {chosen}
    chosen_reward = next((c.reward for c in rec.candidates if c.action == chosen), None)
    pool = []
    for c in rec.candidates:
        if c.action in seen or not is_negative(chosen, c.action):
            continue
        if chosen_reward is not None and c.reward is not None and c.reward >= chosen_reward:
            continue  # scored at least as high as the chosen action: not "lower-scored"
        pool.append(c)
    pool.sort(key=lambda c: (c.reward is not None, c.reward if c.reward is not None else 0.0))
    out += [{"thought": c.thought, "action": c.action} for c in pool]
    return out[:MAX_REJECTED]


_TYPED_ACTIONS = (  # every action string of a session, with its step
    "SELECT step, action FROM actions WHERE session_id = ?",
    "SELECT s.step, c.action FROM candidate_results c JOIN score_requests s "
    "ON c.score_id = s.id WHERE s.session_id = ?",
    "SELECT step, action FROM approvals WHERE session_id = ? AND action IS NOT NULL",
)


def _learn(red: Redactor, con: sqlite3.Connection, sid: str) -> None:
    """Teach the redactor the values typed into password fields anywhere in the session."""
    pages = {
        r["step"]: r["axtree"]
        for r in con.execute(
            "SELECT step, axtree FROM observations WHERE session_id = ? ORDER BY id", (sid,)
        )
    }
    acts = [
        (r["action"], pages.get(r["step"], ""))
        for query in _TYPED_ACTIONS
        for r in con.execute(query, (sid,))
    ]
    red.learn_passwords(acts)


def _turn(red: Redactor, d: dict[str, str], axtree: str) -> dict[str, str]:
    return {"thought": red.text(d.get("thought") or ""), "action": red.action(d["action"], axtree)}


def _trusted_steps(
    con: sqlite3.Connection,
    sessions: Sequence[sqlite3.Row],
    redact: Sequence[str],
    progress: Callable[[int], None] | None,
    summ: Summary,
) -> Iterator[tuple[sqlite3.Row, Redactor, StepRecord, dict[str, str]]]:
    """The scored steps with a trustworthy chosen action, each with its session, the
    session's redactor and the chosen action; every step counts in ``progress``, the others
    as skipped."""
    for s in sessions:
        sid = s["session_id"]
        red = Redactor(redact)
        _learn(red, con, sid)
        summ.per_session[sid] = 0
        for rec in _steps(con, s):
            if progress:
                progress(1)
            texts = [t.action for t in rec.history] + [c.action for c in rec.candidates]
            if rec.chosen is not None:
                texts.append(rec.chosen["action"])
            if not all(read_recorded(a).parsed for a in texts):
                summ.unparsed_actions.append({"task_id": sid, "step_id": rec.step})
            if rec.chosen is None:
                summ.skipped["no_trustworthy_chosen"] += 1
                continue
            yield s, red, rec, rec.chosen


def webprm_rows(
    con: sqlite3.Connection,
    sessions: Sequence[sqlite3.Row],
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
    for s, red, rec, chosen in _trusted_steps(con, sessions, redact, progress, summ):
        sid = s["session_id"]
        start = s["start_url"] or ""
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
            "intent": red.text(s["intent"]),
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


def sft_rows(
    con: sqlite3.Connection,
    sessions: Sequence[sqlite3.Row],
    redact: Sequence[str] = (),
    layout: str = "sharegpt",
    history_steps: int = 10,
    progress: Callable[[int], None] | None = None,
    summary: Summary | None = None,
) -> Iterator[dict[str, Any]]:
    """Instruction-tuning rows: the judge prompt the model sees for a candidate, and as target
    the model's recorded feedback and checklist judgement. Only steps with a trustworthy
    chosen action are used, and only the chosen candidate and the rejected ones."""
    summ = summary if summary is not None else Summary()
    for s, red, rec, chosen in _trusted_steps(con, sessions, redact, progress, summ):
        sid = s["session_id"]
        labelled = [("chosen", chosen), *(("rejected", r) for r in pick_rejected(rec))]
        wrote = 0
        for label, turn in labelled:
            outputs = [(t, r) for t, r in rec.samples.get(turn["action"], []) if r is not None]
            if not outputs:
                continue
            # the recorded judgement that agrees best with the label
            outputs.sort(key=lambda o: o[1] or 0.0, reverse=label == "chosen")
            hist = [Turn(red.text(t.thought), red.action(t.action, "")) for t in rec.history]
            msgs = judge_messages(
                intent=red.text(s["intent"]),
                trajectory=format_trajectory(hist, history_steps),
                current_url=red.text(rec.url),
                text_observation=red.text(mask_password_lines(rec.axtree)),
                checklist=red.text(rec.checklist_text),
                thought=red.text(turn.get("thought") or ""),
                action=red.action(turn["action"], rec.axtree),
            )
            target = red.text(outputs[0][0])
            yield _layout(layout, msgs, target, sid, rec.step, label)
            wrote += 1
        if not wrote:
            summ.skipped["no_recorded_judgement"] += 1
            continue
        summ.rows += wrote
        summ.per_session[sid] += wrote


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
