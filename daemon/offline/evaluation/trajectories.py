"""``eval trajectories``: gold and agent files (or recorded sessions) in, the metrics out."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from webshepherd.daemon.offline.evaluation.matchers import Matcher
from webshepherd.daemon.offline.evaluation.planning import (
    DEFAULT_OPTIONS,
    AgentStep,
    AgentTrajectory,
    Options,
    aggregate,
    task_metrics,
)
from webshepherd.daemon.offline.evaluation.rows import DataError, need_int, need_str, read_rows
from webshepherd.daemon.offline.files import loads
from webshepherd.daemon.recorder import History
from webshepherd.daemon.sessions.plans import planned_from_thought

# The planning paper's agents state their intended action like this (Appendix A).
_GOLD_ALIASES = {
    "task_id": ("task_id", "task id", "task", "taskid"),
    "step": ("step", "step number", "step_number", "step no", "step no."),
    "action": ("action", "text", "step text", "description"),
}


def _field(data: dict[str, Any], name: str) -> str:
    lower = {str(k).strip().lower(): k for k in data}
    for alias in _GOLD_ALIASES[name]:
        if alias in lower:
            return str(lower[alias])
    return name


def read_gold(path: Path) -> dict[str, list[str]]:
    """Gold steps per task, ordered by step number."""
    steps: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for i, row in read_rows(path):
        tid = need_str(path, i, row, _field(row, "task_id"), numbers=True)
        n = need_int(path, i, row, _field(row, "step"))
        action = need_str(path, i, row, _field(row, "action"))
        steps[tid].append((n, action))
    return {t: [a for _, a in sorted(v, key=lambda x: x[0])] for t, v in steps.items()}


def read_agent(path: Path) -> dict[str, AgentTrajectory]:
    """Agent rows ``{task_id, step, planned, executed, answer?, success?}`` grouped by task."""
    rows: dict[str, list[tuple[int, AgentStep]]] = defaultdict(list)
    trajs: dict[str, AgentTrajectory] = {}
    for i, row in read_rows(path):
        tid = need_str(path, i, row, "task_id", numbers=True)
        n = need_int(path, i, row, "step")
        if "executed" not in row and "planned" not in row:
            raise DataError(path, i, "executed", "missing (and no 'planned' either)")
        ex = row.get("executed")
        pl = row.get("planned")
        for name, v in (("executed", ex), ("planned", pl)):
            if v is not None and not isinstance(v, str):
                raise DataError(path, i, name, f"expected a string or null, got {type(v).__name__}")
        traj = trajs.setdefault(tid, AgentTrajectory(tid))
        rows[tid].append((n, AgentStep(executed=ex, planned=pl)))
        if row.get("answer") is not None:
            traj.answer = need_str(path, i, row, "answer", numbers=True)
        for key in ("success", "outcome"):
            v = row.get(key)
            if v is None:
                continue
            if isinstance(v, bool):
                traj.success = v
            elif v in ("success", "failure"):
                traj.success = v == "success"
            elif v != "unknown":
                raise DataError(path, i, key, f"expected true/false or success/failure, got {v!r}")
    for tid, steps in rows.items():
        trajs[tid].steps = [s for _, s in sorted(steps, key=lambda x: x[0])]
    return trajs


def read_sessions(db: Path, session_ids: Sequence[str]) -> dict[str, AgentTrajectory]:
    """Agent trajectories from the recording: executed actions (a tree search's: those of the
    path it returned, not its abandoned branches), planned actions from the thoughts, the
    final answer and the outcome. The task id is the session id."""
    if not db.exists():
        raise DataError(db, None, None, "no recording here")
    history = History.open(db)
    out: dict[str, AgentTrajectory] = {}
    try:
        for sid in session_ids:
            tl = history.timeline(sid)
            if tl is None:
                raise DataError(db, None, "session_id", f"no recorded session {sid!r}")
            traj = AgentTrajectory(sid, answer=tl.answer)
            if tl.summary.outcome in ("success", "failure"):
                traj.success = tl.summary.outcome == "success"
            for a in tl.executed_path():  # a tree search: the path it returned
                traj.steps.append(AgentStep(a.action, planned_from_thought(a.thought)))
            out[sid] = traj
    finally:
        history.close()
    return out


def load_references(path: Path) -> dict[str, dict[str, Any]]:
    """WebArena's test.raw.json: task id → ``{"intent", "must_include"}``."""
    try:
        data = loads(path.read_text(encoding="utf-8"), path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataError(path, None, None, f"cannot read the references ({e})") from None
    if not isinstance(data, list):
        raise DataError(path, None, None, "expected WebArena's list of task configs")
    out: dict[str, dict[str, Any]] = {}
    for i, task in enumerate(data, 1):
        if not isinstance(task, dict) or "task_id" not in task:
            raise DataError(path, i, "task_id", "missing")
        ref = (task.get("eval") or {}).get("reference_answers") or {}
        must = ref.get("must_include") or []
        if not isinstance(must, list):
            raise DataError(path, i, "eval.reference_answers.must_include", "expected a list")
        out[str(task["task_id"])] = {
            "intent": task.get("intent", ""),
            "must_include": [str(x) for x in must],
        }
    return out


def evaluate(
    gold: dict[str, list[str]],
    agent: dict[str, AgentTrajectory],
    matcher: Matcher,
    *,
    references: dict[str, dict[str, Any]] | None = None,
    options: Options = DEFAULT_OPTIONS,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Per-task metrics for every agent task (gold may be missing for some) and aggregates."""
    refs = references or {}
    rows = []
    tasks = sorted(agent, key=lambda t: (len(t), t))
    for n, tid in enumerate(tasks, 1):
        ref = refs.get(tid, {})
        rows.append(
            task_metrics(
                gold.get(tid, []),
                agent[tid],
                matcher,
                intent=ref.get("intent", ""),
                must_include=ref.get("must_include", ()),
                opts=options,
            )
        )
        if progress:
            progress(n, len(tasks))
    return {
        "matcher": matcher.name,
        "options": {
            "lookahead": options.lookahead,
            "recovery_window": options.recovery_window,
            "repetition_on": options.repetition_on,
        },
        "tasks": rows,
        "aggregate": aggregate(rows),
        "missing_gold": sorted(set(agent) - set(gold)),
    }
