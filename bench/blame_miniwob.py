"""How often ``blame`` proves the injected faulty step of a MiniWoB++ run (issue 50.4).

    .venv-integrations/bin/python bench/blame_miniwob.py [--runs 30] [--seed 0] [--json OUT]
        [--tasks T,T...] [--repeat 1]
    .venv-integrations/bin/python bench/blame_miniwob.py --merge A.json B.json ...

Runs in the integrations venv (browsergym-miniwob; the task pages the ``miniwob`` package
ships, as ``file://`` pages); the daemon (the tiny judge, the integration tests' config) runs
in the main venv (``WEBSHEPHERD_DAEMON_PYTHON``, else ``.venv/bin/python``); Debian's Chromium
headless. Each run: one of ``--tasks`` in turn (default: tests/fixtures/miniwob_agent.py's
task types but click-checkboxes, where one wrong box still scores a raw reward above 0, which
BrowserGym counts as won, so no single fault loses it), seeds 1, 2, ..., the scripted agent
through ``ProcessRewardWrapper`` with one wrong action that it does not repair injected at a
step drawn at random (``--seed``) within the agent's plan, the
agent's own action recorded as the candidate it weighed there; then :func:`blame` on the
recording. A run whose page has no wrong action at the drawn step, or that is won all the
same, is skipped (and counted). ``--repeat N`` replays each whole run N more times (after
blame): non-determinism is a whole replay whose outcome is not the recorded one, or whose
pages drift from the recording. ``--merge`` prints the table of several ``--json`` files
(shards run side by side, e.g. one per half of the task types).

Prints, per task type and in all: runs, the proven first bad step's exact accuracy beside the
judge-only guess's (rescore's rule on the recorded rewards), replays per run (mean, max),
against the budget, exact within the budget, writes refused during replays, whole replays
that did not reproduce the recorded outcome (blame's first one and the repeats), and pages
of the recorded prefixes that drifted from the recording (of all pages checked). No figure
is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures import miniwob_agent  # noqa: E402
from tests.integrations.conftest import daemon_process  # noqa: E402

#: The default task types (the module docstring says why click-checkboxes is left out).
TASKS = tuple(t for t in miniwob_agent.TASKS if t != "click-checkboxes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0, help="draws the faulted steps")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated task types")
    parser.add_argument("--repeat", type=int, default=1, help="more whole replays per run")
    parser.add_argument("--merge", type=Path, nargs="+", default=None, help="--json files")
    args = parser.parse_args()
    if args.merge:
        got = [json.loads(p.read_text()) for p in args.merge]
        report(
            [r for g in got for r in g["runs"]],
            sum(g["skipped"] for g in got),
            max(g.get("seconds", 0.0) for g in got),
            sum(len(g.get("errors", [])) for g in got),
        )
        return
    tasks = [t for t in args.tasks.split(",") if t]
    unknown = sorted(set(tasks) - set(miniwob_agent.TASKS))
    if unknown:
        parser.error(f"--tasks: no script for {', '.join(unknown)}")

    from webshepherd.integrations.browsergym import use_chromium

    os.environ["MINIWOB_URL"] = miniwob_agent.pages_url()
    use_chromium()
    rng = random.Random(args.seed)
    rows: list[dict[str, Any]] = []
    skipped = 0
    errors: list[str] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, daemon_process(Path(tmp)) as daemon:
        i = 0
        while len(rows) < args.runs and i < args.runs * 3:
            task = tasks[i % len(tasks)]
            seed = 1 + i // len(tasks)
            i += 1
            try:
                row = one_run(daemon, task, seed, rng, args.repeat)
            except Exception as exc:  # a page that did not load in time on a busy machine
                errors.append(f"{task} seed {seed}: {type(exc).__name__}: {exc}"[:300])
                print(json.dumps({"task": task, "seed": seed, "error": errors[-1]}), flush=True)
                continue
            if row is None:
                skipped += 1
                continue
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.json is not None:  # after each run: a long run cut short keeps its rows
                save(args.json, rows, skipped, errors, time.monotonic() - started)
    seconds = time.monotonic() - started
    report(rows, skipped, seconds, len(errors))
    if args.json is not None:
        save(args.json, rows, skipped, errors, seconds)


def one_run(daemon: Any, task: str, seed: int, rng: random.Random, repeat: int) -> Any:
    """One faulted run recorded and blamed (None: skipped, no wrong action or won anyway)."""
    from webshepherd.integrations.blame import blame
    from webshepherd.integrations.replay import Replayer, load

    sid, won, at = miniwob_agent.record_faulted(
        daemon.url, daemon.token, daemon.data_dir, task, seed,
        lambda obs: rng.randrange(miniwob_agent.plan_length(obs)),
    )  # fmt: skip
    if won is not False or at is None:
        return None
    t0 = time.monotonic()
    rec = load(sid, daemon.data_dir)
    got = blame(sid, miniwob_agent.make, recorded=rec)
    seconds = time.monotonic() - t0
    repeats = []
    if repeat:
        with Replayer(rec) as replayer:
            for _ in range(repeat):
                again = replayer.run(len(rec.steps), None, miniwob_agent.make)
                repeats.append(again)
    runs = [*got.evidence, *repeats]
    row = {
        "task": task, "seed": seed, "injected": at, "found": got.first_bad_step,
        "proven": got.proven, "judge_guess": got.judge_guess, "replays": got.replays,
        "budget": got.budget, "refused": got.refused_writes,
        "reproduced": got.reproduced, "steps": got.steps,
        "repeats_reproduced": [not r.won and r.terminated and not r.drift
                               for r in repeats],
        "per_rank_max": per_rank(got.evidence),
        "pages_checked": sum(r.checked for r in runs),
        "pages_drifted": sum(len(r.drift) for r in runs),
        "seconds": round(seconds, 1), "why": got.why,
    }  # fmt: skip
    return row


def save(path: Path, rows: list[Any], skipped: int, errors: list[str], seconds: float) -> None:
    out = {"runs": rows, "skipped": skipped, "errors": errors, "seconds": round(seconds, 1)}
    path.write_text(json.dumps(out, indent=1) + "\n")


def per_rank(evidence: list[Any]) -> int:
    """The most replays blame ran of one candidate rank (the budget's unit): a recorded
    candidate (each step here records one besides the executed action) or the agent's own
    choice; the first replay, of the whole run, is not a candidate's."""
    recorded = sum(r.tried is not None for r in evidence)
    own = sum(r.tried is None for r in evidence[1:])
    return max(recorded, own)


def report(rows: list[dict[str, Any]], skipped: int, seconds: float, errors: int = 0) -> None:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r["task"]].append(r)
    head = f"{'task':<16}{'runs':>5}{'proven exact':>14}{'in budget':>11}{'judge exact':>13}"
    head += f"{'replays mean/max':>18}{'budget':>8}{'refused':>9}{'not reproduced':>16}"
    head += f"{'pages drifted':>16}"
    print(head)
    for task, rs in [*sorted(by.items()), ("all", rows)]:
        if not rs:
            continue
        n = len(rs)
        exact = sum(r["proven"] and r["found"] == r["injected"] for r in rs)
        within = sum(
            r["proven"] and r["found"] == r["injected"] and r["per_rank_max"] <= r["budget"]
            for r in rs
        )
        judge = sum(r["judge_guess"] == r["injected"] for r in rs)
        replays = [r["replays"] for r in rs]
        whole = [r["reproduced"] for r in rs] + [
            x for r in rs for x in r.get("repeats_reproduced", [])
        ]
        drifted = sum(r.get("pages_drifted", 0) for r in rs)
        checked = sum(r.get("pages_checked", 0) for r in rs)
        print(
            f"{task:<16}{n:>5}{f'{exact}/{n}':>14}{f'{within}/{n}':>11}{f'{judge}/{n}':>13}"
            f"{f'{statistics.mean(replays):.1f}/{max(replays)}':>18}"
            f"{max(r['budget'] for r in rs):>8}{sum(r['refused'] for r in rs):>9}"
            f"{f'{sum(x is not True for x in whole)}/{len(whole)}':>16}"
            f"{f'{drifted}/{checked}':>16}"
        )
    print(
        f"runs skipped (no wrong action at the drawn step, or won anyway): {skipped}; "
        f"runs that failed to record or replay (a page not loaded in time): {errors}; "
        f"{seconds / 60:.1f} min in all"
    )


if __name__ == "__main__":
    main()
