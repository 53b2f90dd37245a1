"""The WebRewardBench harness: score chosen and rejected actions, report MRR and accuracies.

Metrics (Web-Shepherd §5.1):

* MRR: mean over steps of 1 / rank of the chosen action among all candidates by reward;
* step accuracy: share of steps where the chosen action ranks first;
* trajectory accuracy: share of tasks where it ranks first at every step.

Reported, each under its own key: every source subset (``mind2web_test_task``, …,
``webarena``: the paper's Table 6 rows), ``mind2web`` (its three splits' rows together, as the
authors' script also prints it), ``mean_of_subsets`` (the mean of the subsets' figures: the
paper's headline, Table 8) and ``pooled`` (all rows as one set; no figure of the paper).
Within a subset a task is its ``task_id``, as the authors group; where subsets meet
(``mind2web``, ``pooled``) a task is ``(source, task_id)``: the authors' ``mind2web`` groups by
``task_id`` alone, so a task id shared by two splits counts once there.

Ties are penalized: rank = 1 + number of rejected actions whose reward is at least the
chosen one's, so a reward model that gives every candidate the same score ranks the
chosen action last. A missing reward (no parsable judgement) counts as −∞.

Long prompts (``long_prompts``): ``truncate`` (default) cuts the AX tree to fit the context;
``drop`` reproduces the published treatment: a candidate whose whole prompt does not fit
the context (vLLM refused it with HTTP 400) is left out; a rejected one leaves the ranking,
a chosen one ranks last (the authors' −100). The report counts what was dropped.

Defaults follow the authors' benchmark script and the paper's best setting (Table 8, "5
prob"): 5 samples at temperature 1.0, an unparsed sample scored 0 and averaged in, the
row's history cut at ``step_id`` (the last 10 steps reach the prompt).
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NotRequired, Protocol, TypedDict

from webshepherd.daemon.engine.checklist_parse import parse_reference_checklist
from webshepherd.daemon.engine.labels import UnparsedRule
from webshepherd.daemon.engine.prompts import NULL_THOUGHT
from webshepherd.daemon.engine.types import StepInput
from webshepherd.daemon.offline.evaluation.rows import (
    DataError,
    need_int,
    need_str,
    need_str_list,
    read_rows,
)
from webshepherd.daemon.offline.files import loads
from webshepherd.protocol.common import Turn
from webshepherd.protocol.errors import WebShepherdError

if TYPE_CHECKING:
    from webshepherd.daemon.engine.engine import Engine


@dataclass(frozen=True)
class BenchRow:
    row: int
    task_id: str
    step_id: int
    intent: str
    start_url: str
    checklist: str
    thought_history: tuple[str, ...]
    action_history: tuple[str, ...]
    current_url: str
    text_observation: str
    chosen: Turn
    rejected: tuple[Turn, ...]
    source: str

    @property
    def key(self) -> str:
        return f"{self.source}/{self.task_id}/{self.step_id}"

    @property
    def history(self) -> tuple[Turn, ...]:
        """The steps before this one: the row's history lists cut at ``step_id``, as the
        authors' ``get_trajectory`` reads them (the lists may run past the step)."""
        return tuple(
            Turn(t, a)
            for t, a in zip(
                self.thought_history[: self.step_id],
                self.action_history[: self.step_id],
                strict=True,
            )
        )

    @property
    def candidates(self) -> tuple[Turn, ...]:
        """``chosen`` then the rejected actions, in the row's order."""
        return (self.chosen, *self.rejected)


def _turns(path: Path, row: int, data: dict[str, Any], field: str) -> list[Turn]:
    v = data.get(field)
    if v is None:
        raise DataError(path, row, field, "missing")
    if isinstance(v, str):
        try:
            v = loads(v, f"{path} row {row} field {field!r}")
        except json.JSONDecodeError:
            raise DataError(path, row, field, "expected {thought, action} objects") from None
    if isinstance(v, dict):
        v = [v]
    if not isinstance(v, list):
        raise DataError(path, row, field, "expected a list of {thought, action} objects")
    out = []
    for k, t in enumerate(v):
        if not isinstance(t, dict):
            raise DataError(path, row, f"{field}[{k}]", "expected a {thought, action} object")
        action = t.get("action")
        if not isinstance(action, str) or not action.strip():
            raise DataError(path, row, f"{field}[{k}].action", "missing or empty")
        # a null thought reads "None", as the authors' str.format writes it ("THOUGHT: None")
        thought = t.get("thought", "")
        thought = NULL_THOUGHT if thought is None else thought
        if not isinstance(thought, str):
            raise DataError(path, row, f"{field}[{k}].thought", "expected a string")
        out.append(Turn(thought, action))
    return out


def parse_row(path: Path, i: int, d: dict[str, Any]) -> BenchRow:
    """A WebRewardBench row (or a webprm export row: ``checklist``, one ``chosen`` object)."""
    if d.get("gt_checklist") is not None:
        checklist = need_str(path, i, d, "gt_checklist")
    elif d.get("checklist") is not None:
        checklist = need_str(path, i, d, "checklist")
    else:
        raise DataError(path, i, "gt_checklist", "missing (and no 'checklist' either)")
    if not checklist.strip():
        raise DataError(path, i, "gt_checklist", "empty")
    chosen = _turns(path, i, d, "chosen")
    if not chosen:
        raise DataError(path, i, "chosen", "empty list")
    rejected = _turns(path, i, d, "rejected")
    if not rejected:
        raise DataError(path, i, "rejected", "empty list: nothing to rank against")
    th = need_str_list(path, i, d, "thought_history", none_as=NULL_THOUGHT)
    ah = need_str_list(path, i, d, "action_history")
    if th and len(th) != len(ah):
        raise DataError(path, i, "thought_history", f"{len(th)} thoughts for {len(ah)} actions")
    step_id = need_int(path, i, d, "step_id")
    if step_id < 0:
        raise DataError(path, i, "step_id", f"expected a step number ≥ 0, got {step_id}")
    if len(ah) < step_id:
        raise DataError(
            path,
            i,
            "action_history",
            f"{len(ah)} past actions for step {step_id} (needs {step_id})",
        )
    source = d.get("source_name") or d.get("website_name") or "recorded"
    return BenchRow(
        row=i,
        task_id=need_str(path, i, d, "task_id", numbers=True),
        step_id=step_id,
        intent=need_str(path, i, d, "intent"),
        start_url=need_str(path, i, d, "start_url", optional=True),
        checklist=checklist,
        thought_history=tuple(th or [""] * len(ah)),
        action_history=tuple(ah),
        current_url=need_str(path, i, d, "current_url", optional=True),
        text_observation=need_str(path, i, d, "text_observation"),
        chosen=chosen[0],
        rejected=tuple(rejected),
        source=str(source),
    )


def read_bench(path: Path) -> list[BenchRow]:
    rows = [parse_row(path, i, d) for i, d in read_rows(path)]
    if not rows:
        raise DataError(path, None, None, "no rows")
    seen: dict[str, int] = {}
    for r in rows:
        if r.key in seen:
            raise DataError(path, r.row, "step_id", f"duplicate of row {seen[r.key]} ({r.key})")
        seen[r.key] = r.row
    return rows


def step_input(row: BenchRow, samples: int = 1) -> StepInput:
    """The engine's input for ``row``: its checklist as given, the history up to ``step_id``."""
    return StepInput(
        intent=row.intent,
        current_url=row.current_url,
        axtree=row.text_observation,
        checklist=parse_reference_checklist(row.checklist),
        history=row.history,
        candidates=tuple(Turn(c.thought, c.action) for c in row.candidates),
        samples=samples,
    )


class Scorer(Protocol):
    name: str

    def score(self, row: BenchRow, samples: int) -> list[float | str | None]:
        """Rewards of ``[chosen, *rejected]`` (:data:`DROPPED` for a candidate left out)."""
        ...


LongPrompts = Literal["truncate", "drop"]
LONG_PROMPTS: tuple[LongPrompts, ...] = ("truncate", "drop")
#: A dropped candidate's place in ``score``'s result.
DROPPED = "dropped"


class EngineScorer:
    """Scores in process through :class:`~webshepherd.daemon.engine.engine.Engine`.

    ``long_prompts="drop"``: candidates whose uncut prompt reaches the context are not judged
    (their entry is :data:`DROPPED`); the others are judged whole, with the rest of the
    context to write in (as vLLM's server gives a request without ``max_tokens``)."""

    def __init__(self, engine: Engine, long_prompts: LongPrompts = "truncate"):
        self.engine = engine
        self.long_prompts = long_prompts
        self.name = f"engine:{engine.model_id}"

    def score(self, row: BenchRow, samples: int) -> list[float | str | None]:
        step = step_input(row, samples)
        if self.long_prompts == "truncate":
            return [c.reward for c in self.engine.score(step).candidates]
        limit = self.engine.max_context
        fits = [n is not None and n < limit for n in self.engine.judge_prompt_tokens(step)]
        kept = [c for c, ok in zip(step.candidates, fits, strict=True) if ok]
        rewards = iter(
            [c.reward for c in self.engine.score(replace(step, candidates=tuple(kept))).candidates]
            if kept
            else []
        )
        return [next(rewards) if ok else DROPPED for ok in fits]


class DaemonScorer:
    """Scores through a running daemon: one short session per row (reference checklist,
    the row's history reported as actions, ``approval: never``), ended afterwards.
    ``unparsed`` applies the rule to the reply's samples, whatever the daemon's own rule."""

    def __init__(self, url: str, token: str | None = None, unparsed: UnparsedRule = "zero"):
        from webshepherd.protocol.client.sync import Client

        self.client = Client(url, token, name="webshepherd-eval", reconnect=False)
        self.client.connect()
        self.name = f"daemon:{url}"
        self.unparsed = unparsed

    def score(self, row: BenchRow, samples: int) -> list[float | str | None]:
        c = self.client
        s = c.start_session(
            row.intent,
            start_url=row.start_url or None,
            checklist=row.checklist,
            observation={"url": row.current_url or "about:blank", "axtree": row.text_observation},
            agent={"name": "webshepherd-eval"},
        )
        try:
            for t in row.history:
                c.report_action(s.session_id, t.action, thought=t.thought or None)
            scored = c.score(
                s.session_id,
                [{"thought": x.thought, "action": x.action} for x in row.candidates],
                samples=samples,
                approval="never",
            )
        finally:
            c.end_session(s.session_id, "unknown")
        results = sorted(scored.results, key=lambda r: r.index)
        if self.unparsed == "skip":
            return [r.reward for r in results]
        return [
            sum(x.reward or 0.0 for x in r.samples) / len(r.samples) if r.samples else None
            for r in results
        ]

    def close(self) -> None:
        self.client.close()


def ranked(rewards: Sequence[float | str | None]) -> list[float | None]:
    """The rewards a row is ranked by: a dropped rejected candidate leaves, a dropped chosen
    one is None (ranks last); with every rejected one dropped, one None stands in for them,
    as the authors' −100 placeholder."""
    kept: list[float | None] = [None if isinstance(r, str) else r for r in rewards[:1]]
    rest: list[float | None] = [r for r in rewards[1:] if not isinstance(r, str)]
    if not rest and len(rewards) > 1:
        rest = [None]
    return kept + rest


def rank_of_chosen(rewards: Sequence[float | str | None]) -> int:
    """1 + rejected rewards ≥ the chosen's (ties penalized; None = −∞; dropped candidates as
    :func:`ranked` says)."""
    vals = [-math.inf if r is None else float(r) for r in ranked(rewards)]
    chosen = vals[0]
    return 1 + sum(1 for r in vals[1:] if r >= chosen)


MEAN_OF_SUBSETS, POOLED = "mean_of_subsets", "pooled"


class ResultRow(TypedDict):
    """One scored row of a report: its candidates (the chosen first) and their rewards."""

    row: int
    source: str
    task_id: str
    step_id: int
    candidates: list[str]
    rewards: list[float | str | None]  # a str: DROPPED
    rank: int


class Figures(TypedDict):
    """One subset's figures (:func:`metrics`); ``subsets``: for the mean of subsets only."""

    steps: int
    tasks: int
    dropped: int
    mrr: float
    step_accuracy: float
    trajectory_accuracy: float
    subsets: NotRequired[int]


class Report(TypedDict):
    """The resumable JSON report of :func:`run`: settings, rows by key, then the metrics."""

    data: str
    scorer: str
    samples: int
    settings: dict[str, Any]
    rows: dict[str, ResultRow]
    metrics: NotRequired[dict[str, Figures]]
    complete: NotRequired[bool]


def metrics(results: Iterable[ResultRow]) -> dict[str, Figures]:
    """``mrr``, ``step_accuracy``, ``trajectory_accuracy`` (and ``steps``, ``tasks``,
    ``dropped`` candidates) per ``source`` subset; ``mind2web`` over the three
    ``mind2web_test_*`` splits, as the authors print it; ``mean_of_subsets``: the subsets'
    figures averaged (the paper's headline); ``pooled``: every row as one set."""
    groups: dict[str, list[ResultRow]] = defaultdict(list)
    subsets: set[str] = set()
    for r in results:
        groups[r["source"]].append(r)
        subsets.add(r["source"])
        if r["source"].startswith("mind2web_"):
            groups["mind2web"].append(r)
        groups[POOLED].append(r)
    out: dict[str, Figures] = {}
    for src, rows in sorted(groups.items(), key=lambda kv: (kv[0] == POOLED, kv[0])):
        if src == POOLED and subsets:
            n = len(subsets)
            out[MEAN_OF_SUBSETS] = {
                "subsets": n,
                "steps": sum(out[s]["steps"] for s in subsets),
                "tasks": sum(out[s]["tasks"] for s in subsets),
                "dropped": sum(out[s]["dropped"] for s in subsets),
                "mrr": sum(out[s]["mrr"] for s in subsets) / n,
                "step_accuracy": sum(out[s]["step_accuracy"] for s in subsets) / n,
                "trajectory_accuracy": sum(out[s]["trajectory_accuracy"] for s in subsets) / n,
            }
        ranks = [rank_of_chosen(r["rewards"]) for r in rows]
        tasks: dict[tuple[str, str], bool] = {}
        for r, rank in zip(rows, ranks, strict=True):
            k = (r["source"], r["task_id"])
            tasks[k] = tasks.get(k, True) and rank == 1
        out[src] = {
            "steps": len(rows),
            "tasks": len(tasks),
            "dropped": sum(1 for r in rows for x in r["rewards"] if x == DROPPED),
            "mrr": sum(1 / k for k in ranks) / len(ranks),
            "step_accuracy": sum(1 for k in ranks if k == 1) / len(ranks),
            "trajectory_accuracy": sum(tasks.values()) / len(tasks),
        }
    return out


def _save(path: Path, report: Report) -> None:
    tmp = path.with_name(path.name + ".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def run(
    data: Path,
    scorer: Scorer,
    out: Path,
    *,
    samples: int = 5,
    settings: dict[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Report:
    """Score every row not yet in ``out`` (a resumable JSON report), then add the metrics.
    ``settings``: the scorer's other settings (temperature, unparsed rule…), kept in the report;
    a report made with other ones is not resumed."""
    rows = read_bench(data)
    report: Report = {
        "data": str(data),
        "scorer": scorer.name,
        "samples": samples,
        "settings": settings or {},
        "rows": {},
    }
    if out.exists():
        try:
            old = loads(out.read_text(encoding="utf-8"), f"--json {out}")
        except (OSError, json.JSONDecodeError) as e:
            raise WebShepherdError(f"--json {out}: exists but is not a report ({e})") from None
        same = old.get("samples") == samples and old.get("settings", {}) == report["settings"]
        if not same or not isinstance(old.get("rows"), dict):
            raise WebShepherdError(
                f"--json {out}: holds a run with other settings (samples "
                f"{old.get('samples')}, {old.get('settings', {})}); pass another file to start "
                "afresh"
            )
        known = {r.key for r in rows}
        report["rows"] = {k: v for k, v in old["rows"].items() if k in known}
    done = len(report["rows"])
    for r in rows:
        if r.key in report["rows"]:
            continue
        rewards = scorer.score(r, samples)
        report["rows"][r.key] = {
            "row": r.row,
            "source": r.source,
            "task_id": r.task_id,
            "step_id": r.step_id,
            "candidates": [r.chosen.action, *(x.action for x in r.rejected)],
            "rewards": rewards,
            "rank": rank_of_chosen(rewards),
        }
        _save(out, report)
        done += 1
        if progress:
            progress(done, len(rows))
    report["metrics"] = metrics(report["rows"].values())
    report["complete"] = True
    _save(out, report)
    return report
