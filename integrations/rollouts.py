"""Rollout labels: each recorded candidate's value at each step of a recorded BrowserGym run,
estimated by replaying it (Math-Shepherd's estimate, on live pages).

``webshepherd label rollouts SESSION --agent MODULE:FACTORY --rollouts N``, or
:func:`rollouts` from Python. For each executed step and each candidate the judge scored
there (the executed action among them), ``N`` replays (:mod:`~webshepherd.integrations.replay`)
restore the state before the step, run the candidate, then let a fresh agent go on; the
candidate's value is the share of them the env scores a success (it terminates with a reward
> 0). A replay that drifts from the recording is left out of the share, never trusted; a
candidate whose every replay drifted gets no value.

Each value is recorded into the session (unless ``--no-record``) through the daemon, as a
label with ``source: "rollout"`` whose every item has the value's level: ``yes`` when every
replay won, ``no`` when none did, ``in_progress`` between; the note says the share. The
exports read them as truth (docs/export-formats.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webshepherd.integrations.blame import Labeller, connect, load_factory
from webshepherd.integrations.replay import AgentFactory, Recorded, Replayer, load
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.steps import step_label, step_number


@dataclass
class Value:
    """One candidate's rollouts from one recorded step (``step``: the recording's index)."""

    step: int
    action: str
    executed: bool  # the action the run took there
    won: int = 0
    counted: int = 0  # replays that did not drift
    drifted: int = 0

    @property
    def value(self) -> float | None:
        return self.won / self.counted if self.counted else None

    @property
    def level(self) -> str | None:
        """The label's level: yes (every counted replay won), no (none did), in_progress."""
        v = self.value
        return None if v is None else "yes" if v == 1 else "no" if v == 0 else "in_progress"

    def as_dict(self) -> dict[str, object]:
        return {
            "step": step_number(self.step),
            "action": self.action,
            "executed": self.executed,
            "value": self.value,
            "won": self.won,
            "rollouts": self.counted,
            "drifted": self.drifted,
            "level": self.level,
        }


@dataclass
class Rollouts:
    """What :func:`rollouts` estimated: every candidate's value, and the replays it took."""

    session_id: str
    n: int
    values: list[Value] = field(default_factory=list)
    replays: int = 0
    refused_writes: int = 0

    def as_dict(self) -> dict[str, object]:
        return {
            "session_id": self.session_id,
            "rollouts": self.n,
            "steps_counted_from": 1,
            "values": [v.as_dict() for v in self.values],
            "replays": self.replays,
            "refused_writes": self.refused_writes,
        }

    def lines(self) -> list[str]:
        out = []
        for v in self.values:
            share = "drifted" if v.value is None else f"{v.won}/{v.counted} won"
            mark = " (executed)" if v.executed else ""
            out.append(f"{step_label(v.step)}: {v.action!r}{mark}: {share}")
        out.append(f"replays: {self.replays} · writes refused: {self.refused_writes}")
        return out


def rollouts(
    session_id: str,
    agent: AgentFactory | str,
    n: int = 4,
    *,
    data_dir: str | Path | None = None,
    env: Any = None,
    sandbox: Sequence[str] = (),
    max_steps: int | None = None,
    recorded: Recorded | None = None,
) -> Rollouts:
    """Estimate every recorded candidate's value by ``n`` replays each (module docstring);
    the arguments as :func:`~webshepherd.integrations.blame.blame`'s."""
    if n < 1:
        raise WebShepherdError(f"--rollouts {n}: at least 1")
    factory = load_factory(agent) if isinstance(agent, str) else agent
    rec = recorded if recorded is not None else load(session_id, data_dir)
    result = Rollouts(session_id, n)
    if not rec.steps:
        return result
    with Replayer(rec, env=env, sandbox=sandbox, max_steps=max_steps) as replayer:
        for k, step in enumerate(rec.steps):
            actions = [a for a, _ in step.candidates]
            for action in actions:
                v = Value(step.step, action, action == step.action)
                for _ in range(n):
                    got = replayer.run(k, action, factory)
                    if got.drift:
                        v.drifted += 1
                        continue
                    v.counted += 1
                    v.won += got.won
                result.values.append(v)
        result.replays = replayer.replays
        result.refused_writes = replayer.refused
    return result


def record(result: Rollouts, labeller: Labeller) -> int:
    """Record each estimated value as a label with ``source: "rollout"``; how many."""
    done = 0
    for v in result.values:
        if v.level is None:
            continue
        note = f"rollouts: {v.won}/{v.counted} won" + (
            f" ({v.drifted} drifted, left out)" if v.drifted else ""
        )
        labeller.label(v.step, v.action, v.level, "rollout", note)
        done += 1
    return done


def run(args: argparse.Namespace) -> int:
    """``webshepherd label rollouts`` (commands.py's arguments)."""
    factory = load_factory(args.agent)
    rec = load(args.session, args.data_dir)
    labeller = None if args.no_record else connect(args.session, args.url, "label rollouts")
    try:
        result = rollouts(args.session, factory, args.rollouts, sandbox=args.sandbox, recorded=rec)
        for line in result.lines():
            print(line)
        if args.json is not None:
            args.json.write_text(json.dumps(result.as_dict(), indent=1) + "\n")
        if labeller is not None:
            print(f"recorded: {record(result, labeller)} labels (source rollout)")
    finally:
        if labeller is not None:
            labeller.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from webshepherd.integrations.commands import rollouts_arguments

    parser = argparse.ArgumentParser(
        prog="python -m webshepherd.integrations.rollouts",
        description="Label a recorded run's candidates by the share of rollouts that won.",
        allow_abbrev=False,
    )
    rollouts_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except WebShepherdError as exc:
        print(f"label rollouts: {exc.message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
