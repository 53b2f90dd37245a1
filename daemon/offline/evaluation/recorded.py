"""Score a judge on your own recordings (``webshepherd eval recorded``): re-score the recorded
candidate sets whose right candidate truth names, without a browser.

A step counts when truth (``offline/export/truth.py``: a person, a label, the outcome, a
replay) names its right candidate among the candidates recorded at that step, and at least one
other candidate was recorded beside it. The judge scores every recorded candidate of the step
from what the recording kept (the page's AX tree and screenshot, the actions before the step,
the session's checklist, reference or generated), as the daemon built the prompt; truth never
comes from a judge. Figures per judge:

* pick accuracy ``X/Y``: steps where the right candidate's reward is strictly above every
  other candidate's (a tie is a miss; a candidate without a reward ranks last);
* MRR: the mean of 1 / the right candidate's rank (ties penalized, as rewardbench.py ranks);
* unparsed outputs: the judge's samples that gave no label, by the engine's reason
  (``no_answer``, ``no_label``, ``off_checklist``, ``cut_by_limit``…).
"""

from __future__ import annotations

import base64
import contextlib
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.engine.types import StepInput
from webshepherd.daemon.offline.evaluation.rewardbench import rank_of_chosen
from webshepherd.daemon.recorder import History
from webshepherd.daemon.recorder.timeline import Timeline
from webshepherd.daemon.sessions.convert import candidate_result, parsed_checklist
from webshepherd.protocol.common import CandidateResult, Turn
from webshepherd.protocol.errors import WebShepherdError

if TYPE_CHECKING:
    from webshepherd.daemon.engine.engine import Engine
    from webshepherd.protocol.client.sync import Client

#: why a session or a step gives no pick step (the report's ``skipped``)
SKIPS = {
    "no_checklist": "the session has no checklist",
    "no_right_candidate": "truth names no right candidate at the step",
    "right_not_scored": "the right action was not among the step's scored candidates",
    "single_candidate": "the right candidate was the only one scored",
}


@dataclass(frozen=True)
class PickStep:
    """One step to rank: every candidate recorded at it, the right one at ``right``."""

    session_id: str
    step: int
    inp: StepInput[Turn]
    right: int
    source: str  # where the truth came from (person, label, outcome, replay…)
    checklist: str  # the checklist scored against: reference or generated

    @property
    def key(self) -> str:
        return f"{self.session_id}/{self.step}"


@dataclass
class PickSet:
    """What a recording gives: the steps to rank, each session's checklist, what was left."""

    recording: str
    steps: list[PickStep] = field(default_factory=list)
    checklists: dict[str, str] = field(default_factory=dict)  # session -> reference | generated
    skipped: Counter[str] = field(default_factory=Counter)

    def sessions(self) -> list[str]:
        """The sessions with at least one step to rank, in recording order."""
        return list(dict.fromkeys(s.session_id for s in self.steps))

    def add(self, other: PickSet) -> None:
        """``other``'s steps after these (another recording)."""
        self.recording = ", ".join(x for x in (self.recording, other.recording) if x)
        self.steps += other.steps
        self.checklists.update(other.checklists)
        self.skipped.update(other.skipped)

    def only(self, session_ids: Iterable[str]) -> PickSet:
        keep = set(session_ids)
        return PickSet(
            self.recording,
            [s for s in self.steps if s.session_id in keep],
            {k: v for k, v in self.checklists.items() if k in keep},
            Counter(),
        )


def open_recording(path: Path) -> History:
    """The recording at ``path``: a data dir or its SQLite file; anything else is named."""
    db = path / DB_NAME if path.is_dir() else path
    if not db.is_file():
        raise WebShepherdError(
            f"{path}: no recording here (expected a daemon's data dir holding {DB_NAME}, or "
            "that file; pass --data-dir)"
        )
    history = History.open(db)
    try:
        history.db.execute("SELECT 1 FROM sessions LIMIT 1").fetchall()
    except sqlite3.DatabaseError as e:
        history.close()
        raise WebShepherdError(f"{db}: not a webshepherd recording ({e})") from None
    return history


def _history_before(tl: Timeline, step: int, tree_paths: dict[int, list[Turn]]) -> tuple[Turn, ...]:
    """The actions before ``step`` as the daemon's prompt had them: a tree search's path to
    the expanded node, else every action reported before the step."""
    if step in tree_paths:
        return tuple(tree_paths[step])
    return tuple(Turn(x.thought or "", x.action) for x in tl.actions if x.step < step)


def session_steps(tl: Timeline, out: PickSet) -> None:
    """Add ``tl``'s steps to rank to ``out`` (and what it skipped)."""
    from webshepherd.daemon.offline.export.siblings import tree_steps
    from webshepherd.daemon.offline.export.truth import candidates, session_truths

    sid = tl.summary.session_id
    if tl.checklist is None:
        out.skipped["no_checklist"] += 1
        return
    out.checklists[sid] = tl.checklist.source
    checklist = parsed_checklist(tl.checklist)
    paths = {n: at.history for n, at in tree_steps(tl).items()}
    steps = {st.step: st for st in tl.steps}
    for truth in session_truths(tl):
        st = steps.get(truth.step)
        if st is None or not st.scorings:
            continue
        if truth.chosen is None:
            out.skipped["no_right_candidate"] += 1
            continue
        cands = {a: Turn(c.candidate.thought, a) for a, c in candidates(st).items()}
        actions = list(cands)
        if truth.chosen.action not in cands:
            out.skipped["right_not_scored"] += 1
            continue
        if len(actions) < 2:
            out.skipped["single_candidate"] += 1
            continue
        inp = StepInput(
            intent=tl.summary.intent,
            current_url=st.url,
            axtree=st.axtree,
            checklist=checklist,
            history=_history_before(tl, st.step, paths),
            candidates=tuple(cands.values()),
            screenshot=st.screenshot,
            screenshot_mime=st.screenshot_mime,
        )
        right = actions.index(truth.chosen.action)
        out.steps.append(
            PickStep(sid, st.step, inp, right, truth.chosen.source, tl.checklist.source)
        )


def recorded_sessions(path: Path) -> list[str]:
    """The ids of the sessions recorded at ``path``, oldest first."""
    history = open_recording(path)
    try:
        return [s.session_id for s in history.sessions()]
    finally:
        history.close()


def pick_steps(path: Path, session_ids: Sequence[str] | None = None) -> PickSet:
    """The steps to rank of the recording at ``path``: every session's, or ``session_ids``'
    (each must be recorded)."""
    history = open_recording(path)
    try:
        known = {s.session_id: s for s in history.sessions()}
        if session_ids:
            missing = [i for i in session_ids if i not in known]
            if missing:
                raise WebShepherdError(
                    f"--session: no recorded session {', '.join(missing)} in {path} "
                    f"({len(known)} recorded; `webshepherd report --list` names them)"
                )
        wanted = list(dict.fromkeys(session_ids)) if session_ids else list(known)
        out = PickSet(str(path))
        for sid in wanted:
            tl = history.timeline(sid)
            if tl is not None:
                session_steps(tl, out)
    finally:
        history.close()
    return out


class Judge(Protocol):
    """Scores one step's candidates; ``name`` says which judge."""

    name: str

    def judge(self, step: PickStep) -> list[CandidateResult]:
        """Each candidate's result, in the step's order."""
        ...

    def close(self) -> None: ...


class EngineJudge:
    """A judge in this process (``--model``): the engine scores the step as recorded."""

    def __init__(self, engine: Engine, name: str):
        self.engine = engine
        self.name = name

    def judge(self, step: PickStep) -> list[CandidateResult]:
        return [candidate_result(c) for c in self.engine.score(step.inp).candidates]

    def close(self) -> None:
        self.engine.close()


class DaemonJudge:
    """A served judge (``--url``): one short session per step (the recorded checklist's text
    as its checklist, the recorded page, the actions before the step reported, the candidates
    scored with ``approval: never``), ended afterwards; marked ``source: import``."""

    def __init__(self, client: Client, name: str):
        self.client = client
        self.name = name

    def judge(self, step: PickStep) -> list[CandidateResult]:
        inp, c = step.inp, self.client
        assert inp.checklist is not None
        obs: dict[str, Any] = {"url": inp.current_url or "about:blank", "axtree": inp.axtree}
        if inp.screenshot is not None:
            mime = inp.screenshot_mime or "image/png"
            obs["screenshot"] = {"mime": mime, "data": base64.b64encode(inp.screenshot).decode()}
        s = c.start_session(
            inp.intent,
            checklist=inp.checklist.text,
            observation=obs,
            agent={"name": "webshepherd-eval"},
            source="import",
        )
        try:
            for t in inp.history:
                c.report_action(s.session_id, t.action, thought=t.thought or None)
            scored = c.score(
                s.session_id,
                [{"thought": x.thought, "action": x.action} for x in inp.candidates],
                samples=1,
                approval="never",
            )
        finally:
            c.end_session(s.session_id, "unknown")
        return sorted(scored.results, key=lambda r: r.index)

    def close(self) -> None:
        self.client.close()


@dataclass(frozen=True)
class Ranked:
    """One judge's result at one step."""

    rewards: list[float | None]
    rank: int  # of the right candidate: 1 + the others at or above its reward
    outputs: int  # the judge's outputs (samples) at the step
    unparsed: list[str]  # the reason of each output that gave no label

    @property
    def picked(self) -> bool:
        return self.rank == 1


def ranked(step: PickStep, results: Sequence[CandidateResult]) -> Ranked:
    """``results`` (each candidate's) as the right candidate's rank and the unparsed outputs."""
    if len(results) != len(step.inp.candidates):
        raise WebShepherdError(
            f"{step.key}: the judge returned {len(results)} results for "
            f"{len(step.inp.candidates)} candidates"
        )
    rewards = [r.reward for r in results]
    order = [rewards[step.right], *(x for i, x in enumerate(rewards) if i != step.right)]
    unparsed: list[str] = [
        s.unparsed or "no_answer" for r in results for s in r.samples if s.reward is None
    ]
    outputs = sum(max(1, len(r.samples)) for r in results)
    return Ranked(rewards, rank_of_chosen(order), outputs, unparsed)


@dataclass
class Figures:
    """One judge's figures over a pick set."""

    judge: str
    steps: int = 0
    picked: int = 0
    reciprocal: float = 0.0
    outputs: int = 0
    unparsed: Counter[str] = field(default_factory=Counter)

    def add(self, r: Ranked) -> None:
        self.steps += 1
        self.picked += r.picked
        self.reciprocal += 1 / r.rank
        self.outputs += r.outputs
        self.unparsed.update(r.unparsed)

    @property
    def unparsed_count(self) -> int:
        return sum(self.unparsed.values())

    @property
    def unparsed_share(self) -> float:
        return self.unparsed_count / self.outputs if self.outputs else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "pick_accuracy": {
                "right_first": self.picked,
                "steps": self.steps,
                "share": self.picked / self.steps if self.steps else None,
            },
            "mrr": self.reciprocal / self.steps if self.steps else None,
            "outputs": self.outputs,
            "unparsed": self.unparsed_count,
            "unparsed_by_reason": dict(sorted(self.unparsed.items())),
        }


@dataclass
class Comparison:
    """Every judge's figures on one pick set, and each step's rewards per judge."""

    picks: PickSet
    figures: list[Figures]
    rows: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        checklists = Counter(self.picks.checklists[s] for s in self.picks.sessions())
        return {
            "recording": self.picks.recording,
            "sessions": self.picks.sessions(),
            "checklists": dict(sorted(checklists.items())),
            "steps": len(self.picks.steps),
            "skipped": dict(sorted(self.picks.skipped.items())),
            "judges": [f.as_dict() for f in self.figures],
            "rows": self.rows,
        }


def compare(
    picks: PickSet,
    judges: Sequence[Callable[[], Judge]],
    progress: Callable[[int, int], None] | None = None,
) -> Comparison:
    """Every judge on every step of ``picks``, one judge at a time (each opened by its
    callable, closed before the next loads: two big checkpoints never share the memory)."""
    rows: list[dict[str, Any]] = [
        {
            "session_id": step.session_id,
            "step": step.step,
            "checklist": step.checklist,
            "truth_source": step.source,
            "candidates": [c.action for c in step.inp.candidates],
            "right": step.right,
            "judges": {},
        }
        for step in picks.steps
    ]
    figures: list[Figures] = []
    total = len(picks.steps) * len(judges)
    done = 0
    for open_judge in judges:
        judge = open_judge()
        try:
            fig = Figures(judge.name)
            for step, row in zip(picks.steps, rows, strict=True):
                r = ranked(step, judge.judge(step))
                fig.add(r)
                row["judges"][judge.name] = {
                    "rewards": r.rewards,
                    "rank": r.rank,
                    "unparsed": r.unparsed,
                }
                done += 1
                if progress is not None:
                    progress(done, total)
        finally:
            judge.close()
        figures.append(fig)
    return Comparison(picks, figures, rows)


def table(cmp: Comparison) -> list[str]:
    """What ``eval recorded`` prints: the pick set, then the judges side by side (one column
    each, named above the table)."""
    picks = cmp.picks
    kinds = Counter(picks.checklists[s] for s in picks.sessions())
    said = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "none"
    out = [
        f"{len(picks.steps)} step(s) with a known right candidate among 2 or more, in "
        f"{len(picks.sessions())} session(s); checklist: each session's own ({said})"
    ]
    if picks.skipped:
        out.append("left out: " + ", ".join(f"{k} {n}" for k, n in sorted(picks.skipped.items())))
    figs = cmp.figures
    out += [f"judge {i}: {f.judge}" for i, f in enumerate(figs, 1)]
    reasons = sorted({k for f in figs for k in f.unparsed})
    lines: list[tuple[str, list[str]]] = [
        ("", [f"judge {i}" for i in range(1, len(figs) + 1)]),
        (
            "pick accuracy:",
            [
                f"{f.picked}/{f.steps}" + (f" ({f.picked / f.steps:.0%})" if f.steps else "")
                for f in figs
            ],
        ),
        ("MRR:", [f"{f.reciprocal / f.steps:.3f}" if f.steps else "-" for f in figs]),
        ("unparsed outputs:", [f"{f.unparsed_count}/{f.outputs}" for f in figs]),
        *((f"  {k}", [str(f.unparsed[k]) for f in figs]) for k in reasons),
    ]
    head = max(len(name) for name, _ in lines)
    cols = [max(len(cells[i]) for _, cells in lines) for i in range(len(figs))]
    for name, cells in lines:
        row = "  ".join(c.ljust(w) for c, w in zip(cells, cols, strict=True))
        out.append(f"{name:<{head}}  {row}".rstrip())
    return out


def more_unparsed(base: Figures, trained: Figures) -> str | None:
    """A warning when ``trained``'s share of unparsed outputs is above ``base``'s."""
    if trained.unparsed_share <= base.unparsed_share:
        return None
    return (
        f"warning: the trained judge's outputs stop parsing: {trained.unparsed_count} of "
        f"{trained.outputs} unparsed against {base.unparsed_count} of {base.outputs} for the "
        f"starting judge ({trained.judge}); a judgement that does not parse gives no reward. "
        "Train for fewer steps or at a lower --lr, or on more rows (docs/training.md)"
    )


def model_judge(
    model: str, device: str = "auto", max_new_tokens: int | None = None, name: str | None = None
) -> Callable[[], Judge]:
    """A judge loaded in this process when opened: ``model`` a checkpoint (folder or cached
    model id), or ``tiny``, the shipped tiny judge. Greedy, one output per candidate."""

    def load() -> Judge:
        from webshepherd.daemon.engine.engine import EngineConfig
        from webshepherd.daemon.engine.loader import load_engine

        path = model
        if model == "tiny":
            from webshepherd.daemon.dev.tiny_model import ensure_tiny_model

            path = str(ensure_tiny_model(progress=False))
        with contextlib.suppress(ImportError):  # one bar: the comparison's own
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        config = EngineConfig(max_new_tokens=max_new_tokens)
        return EngineJudge(load_engine(path, device=device, config=config), name or model)

    return load


def served_judge(
    url: str | None, token: str | None, name: str | None = None
) -> Callable[[], Judge]:
    """The judge a running daemon serves (``url`` None: ``$WEBSHEPHERD_URL`` or the default
    address), connected when opened."""

    def connect() -> Judge:
        from webshepherd.protocol.client.sync import Client

        client = Client(url, token, name="webshepherd-eval", reconnect=False)
        client.connect()
        return DaemonJudge(client, name or f"served:{client.url}")

    return connect
