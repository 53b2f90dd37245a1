"""The first bad step of a recorded run, proven by replaying it: the step after which the run
can no longer be won.

``webshepherd blame SESSION --agent MODULE:FACTORY [--json PATH]`` (the same as
``python -m webshepherd.integrations.blame``), or :func:`blame` from Python. ``FACTORY`` makes
a fresh agent of BrowserGym's and AgentLab's shape (``get_action(obs)`` returning an action or
an ``(action, info)`` pair); ``MODULE`` is imported as Python imports it (``PYTHONPATH``, the
current folder). It runs in the integrations' environment (BrowserGym): the daemon's command
line finds it through the ``webshepherd.commands`` entry points (commands.py).

A proven first bad step is recorded into the session, as truth from a replay (unless
``--no-record``): through the daemon (``$WEBSHEPHERD_URL``, or ``--url``), labels with
``source: "replay"``: the step's executed action every item ``no``, the candidate that won
from that step every item ``yes`` (when it was a recorded candidate). The exports pair them
(docs/export-formats.md), the report shows the step as proven.

How (docs/rescore.md, "Blame"): a replay (:mod:`webshepherd.integrations.replay`) restores the
state before step k and tries one of the step's recorded candidates (best by the judge first,
the executed one left out), else the agent's own choice, then lets a fresh agent go on; the
step "can be won" when one of them wins (the env terminates with a reward > 0). The recorded
run is replayed whole first (does it reproduce its outcome?), then step 1 (can the task be won
at all?), then a binary search between the last step known winnable and the first known lost.
The first bad step is the last winnable one: **proven** when a replay from it with another
action won and every try from the step after it lost, none of those replays drifting from
the recording. Budget: each candidate rank is tried at most ``ceil(log2 T) + 2`` times (``T``
the run's steps), by default. ``judge_guess``: the first bad step the judge's rewards name
(rescore's rule), for comparison. Steps are numbered as the terminal shows them (from 1).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from webshepherd.integrations.replay import (
    AgentFactory,
    CannotReset,
    Recorded,
    Replayer,
    Run,
    load,
)
from webshepherd.protocol.common import ItemLabel
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.requests import TruthSource
from webshepherd.protocol.steps import step_label, step_number


class BadAgent(WebShepherdError, ValueError):
    """``--agent`` names no factory that can be imported (said in one line)."""


#: The JSON's keys, in order (more follow them).
KEYS = ("first_bad_step", "steps_counted_from", "proven", "replays", "judge_guess", "evidence")


@dataclass
class Blame:
    """What :func:`blame` found. Step indices here are the recording's (from 0);
    :meth:`as_dict` numbers them as the terminal does (from 1)."""

    session_id: str
    steps: int
    first_bad_step: int | None
    proven: bool
    replays: int
    judge_guess: int | None
    budget: int  # replays allowed per candidate rank
    evidence: list[Run] = field(default_factory=list)  # every replay, in order
    refused_writes: int = 0
    reproduced: bool | None = None  # the whole run replayed to the recorded outcome
    why: str = ""  # a sentence: how it was proven, or why not
    winner: Run | None = None  # the replay that won from the first bad step

    def as_dict(self) -> dict[str, object]:
        def num(step: int | None) -> int | None:
            return None if step is None else step_number(step)

        evidence = []
        for run in self.evidence:
            row = run.as_dict()
            row["from_step"] = step_number(run.k)
            row["drift"] = [{**d.as_dict(), "step": step_number(d.step)} for d in run.drift]
            evidence.append(row)
        return {
            "first_bad_step": num(self.first_bad_step),
            "steps_counted_from": 1,
            "proven": self.proven,
            "replays": self.replays,
            "judge_guess": num(self.judge_guess),
            "evidence": evidence,
            "session_id": self.session_id,
            "steps": self.steps,
            "budget_per_candidate": self.budget,
            "refused_writes": self.refused_writes,
            "reproduced": self.reproduced,
            "why": self.why,
        }

    def lines(self) -> list[str]:
        bad = "none" if self.first_bad_step is None else step_label(self.first_bad_step)
        state = "proven" if self.proven else "not proven"
        guess = "none" if self.judge_guess is None else step_label(self.judge_guess)
        drifted = sum(bool(r.drift) for r in self.evidence)
        return [
            f"first bad step: {bad} ({state}): {self.why}",
            f"judge's guess: {guess}",
            f"replays: {self.replays} (at most {self.budget} per candidate tried) · writes "
            f"refused: {self.refused_writes} · replays drifting from the recording: {drifted}"
            + ("" if self.reproduced is None else f" · reproduced: {self.reproduced}"),
        ]


class _Search:
    """The probes of one blame: which steps can still be won, within the budget."""

    def __init__(self, replayer: Replayer, agent: AgentFactory, budget: int) -> None:
        self.replayer = replayer
        self.agent = agent
        self.budget = budget
        self.used: dict[int, int] = {}  # candidate rank -> replays
        self.runs: list[Run] = []
        self.winner: dict[int, Run] = {}
        self.short: set[int] = set()  # steps whose tries the budget cut

    def tries(self, k: int) -> list[str | None]:
        """Step ``k``'s alternatives: its recorded candidates but the executed action, best
        by the judge first, then the agent's own choice (None)."""
        steps = self.replayer.recorded.steps
        if k >= len(steps):
            return [None]
        executed = steps[k].action
        return [*(a for a, _ in steps[k].candidates if a != executed), None]

    def winnable(self, k: int) -> bool:
        for rank, tried in enumerate(self.tries(k)):
            if self.used.get(rank, 0) >= self.budget:
                self.short.add(k)
                continue
            self.used[rank] = self.used.get(rank, 0) + 1
            run = self.replayer.run(k, tried, self.agent)
            self.runs.append(run)
            if run.won:
                self.winner[k] = run
                return True
        return False


def blame(
    session_id: str,
    agent: AgentFactory | str,
    *,
    data_dir: str | Path | None = None,
    env: Any = None,
    sandbox: Sequence[str] = (),
    budget: int | None = None,
    max_steps: int | None = None,
    recorded: Recorded | None = None,
) -> Blame:
    """Prove the first bad step of the recorded session ``session_id`` (module docstring).
    ``agent``: a factory of fresh agents, or ``"MODULE:FACTORY"``; ``data_dir``: the daemon's
    data folder; ``env``: the env to replay on (default: a fresh one of the recorded task);
    ``sandbox``: origins whose writes may leave during replays; ``budget``: replays per
    candidate rank. A session whose environment cannot be reset is :class:`CannotReset`."""
    factory = load_factory(agent) if isinstance(agent, str) else agent
    rec = recorded if recorded is not None else load(session_id, data_dir)
    T = len(rec.steps)
    per = budget if budget is not None else math.ceil(math.log2(max(T, 1))) + 2
    result = Blame(session_id, T, None, False, 0, rec.judge_guess, per)
    if rec.outcome == "success":
        result.why = "the run was won: no step is to blame"
        return result
    if T == 0:
        result.why = "the run executed no action"
        return result
    with Replayer(rec, env=env, sandbox=sandbox, max_steps=max_steps) as replayer:
        search = _Search(replayer, factory, per)
        whole = replayer.run(T, None, factory)
        search.runs.append(whole)
        result.reproduced = whole.terminated and not whole.won and not whole.drift
        end_lost = not whole.won
        if not end_lost:
            result.why = "replayed whole, the run was won: the recording does not reproduce"
        elif not search.winnable(0):
            result.why = "no try from step 1 won: the task was not won from its start"
        else:
            lo, hi = 0, T  # lo: known winnable; hi: known lost
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if search.winnable(mid):
                    lo = mid
                else:
                    hi = mid
            result.first_bad_step = lo
            result.winner = search.winner[lo]
            result.proven, result.why = _proof(search, whole, lo, hi)
        result.evidence = search.runs
        result.replays = replayer.replays
        result.refused_writes = replayer.refused
    return result


def _proof(search: _Search, whole: Run, lo: int, hi: int) -> tuple[bool, str]:
    """Whether ``lo`` is proven the first bad step, and the sentence saying so (or why not)."""
    won = search.winner[lo]
    tried = "the agent's own choice" if won.tried is None else repr(won.tried)
    lost = [r for r in search.runs if r.k == hi] or [whole]
    after = step_label(hi) if hi < len(search.replayer.recorded.steps) else "the end"
    drifted = [r for r in [won, *lost] if r.drift]
    if drifted:
        return False, f"the deciding replays drifted from the recording (from {after})"
    if hi in search.short:
        return False, f"the budget cut the tries from {after}"
    if any(r.error and not r.terminated for r in lost):
        return False, f"a try from {after} failed to run: {next(r.error for r in lost if r.error)}"
    return True, (f"from {step_label(lo)}, {tried} won; from {after}, every try lost ({len(lost)})")


def load_factory(spec: str) -> AgentFactory:
    """``MODULE:FACTORY`` imported as Python imports it (``PYTHONPATH``, the current folder)."""
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise BadAgent(f"--agent {spec!r}: expected MODULE:FACTORY (e.g. my_agent:make)")
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        got = importlib.import_module(module)
    except ImportError as exc:
        raise BadAgent(f"--agent {spec!r}: cannot import {module}: {exc}") from None
    factory = getattr(got, name, None)
    if not callable(factory):
        raise BadAgent(f"--agent {spec!r}: {module} has no callable {name}")
    return factory


class Labeller:
    """Labels sent to the daemon that records the session (an agent's connection, as the
    wrapper's; ``url``: else ``$WEBSHEPHERD_URL``, else the local daemon), each with one level
    for every item of the session's checklist."""

    def __init__(self, session_id: str, url: str | None = None) -> None:
        from webshepherd.protocol.client.sync import Client

        self.session_id = session_id
        self.client = Client(url)
        try:
            self.client.connect()
            got = self.client.session(session_id)
        except BaseException:
            self.client.close()
            raise
        if got.checklist is None:
            self.client.close()
            raise WebShepherdError(
                f"session {session_id} has no checklist: labels need one (one level per item)"
            )
        self.items = len(got.checklist.items)

    def label(self, step: int, action: str, level: str, source: TruthSource, note: str) -> None:
        items: list[ItemLabel] = [cast("ItemLabel", level)] * self.items
        self.client.label(self.session_id, step, action, items, source=source, note=note[:500])

    def close(self) -> None:
        self.client.close()


def connect(session_id: str, url: str | None, command: str) -> Labeller:
    """A :class:`Labeller` for ``command``, its failure said with the way to run without."""
    try:
        return Labeller(session_id, url)
    except WebShepherdError as exc:
        raise WebShepherdError(
            f"{exc.message} ({command} records its labels through the daemon that recorded "
            "the session; --no-record records nothing)",
            exc.code,
        ) from None


def record(result: Blame, rec: Recorded, labeller: Labeller) -> list[str]:
    """Record ``result``'s proven first bad step (nothing when it is not proven): the step's
    executed action lost, the recorded candidate that won from it won (``source: "replay"``).
    The lines say what was recorded."""
    if not result.proven or result.first_bad_step is None:
        return ["recorded: nothing (no proven first bad step)"]
    step = rec.steps[result.first_bad_step]
    won = result.winner
    note = f"blame: proven first bad step: {result.why}"
    out = []
    if step.action is not None:
        labeller.label(step.step, step.action, "no", "replay", note)
        out.append(f"recorded: {step_label(step.step)}'s action {step.action!r} lost (replay)")
    winning = None if won is None else (won.tried or (won.actions[0] if won.actions else None))
    if winning is not None and winning in (a for a, _ in step.candidates):
        labeller.label(step.step, winning, "yes", "replay", note)
        out.append(f"recorded: {step_label(step.step)}'s candidate {winning!r} won (replay)")
    elif winning is not None:
        out.append(f"not recorded: {winning!r} won but was not a candidate scored there")
    return out


def run(args: argparse.Namespace) -> int:
    """``webshepherd blame`` (commands.py's arguments)."""
    factory = load_factory(args.agent)
    rec = load(args.session, args.data_dir)
    labeller = None if args.no_record else connect(args.session, args.url, "blame")
    try:
        result = blame(
            args.session, factory, data_dir=args.data_dir, sandbox=args.sandbox,
            budget=args.budget, recorded=rec,
        )  # fmt: skip
        for line in result.lines():
            print(line)
        if args.json is not None:
            args.json.write_text(json.dumps(result.as_dict(), indent=1) + "\n")
        if labeller is not None:
            for line in record(result, rec, labeller):
                print(line)
    finally:
        if labeller is not None:
            labeller.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from webshepherd.integrations.commands import blame_arguments

    parser = argparse.ArgumentParser(
        prog="python -m webshepherd.integrations.blame",
        description="Prove a recorded run's first bad step by replaying it.",
        allow_abbrev=False,  # no flag taken by a prefix (tests/daemon/cli/test_parsers.py)
    )
    blame_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (CannotReset, WebShepherdError, ValueError) as exc:
        print(f"blame: {getattr(exc, 'message', None) or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
