"""How often ``blame`` proves the injected faulty step of a MiniWoB++ run (issue 50.4).

    .venv-integrations/bin/python bench/blame_miniwob.py [--runs 30] [--seed 0] [--json OUT]

Runs in the integrations venv (browsergym-miniwob; the task pages the ``miniwob`` package
ships, as ``file://`` pages); the daemon (the tiny judge, the integration tests' config) runs
in the main venv (``WEBSHEPHERD_DAEMON_PYTHON``, else ``.venv/bin/python``); Debian's Chromium
headless. Each run: one of tests/fixtures/miniwob_agent.py's task types in turn (seeds
1, 2, ...), the scripted agent through ``ProcessRewardWrapper`` with one wrong action that it
does not repair injected at a step drawn at random (``--seed``) within the agent's plan, the
agent's own action recorded as the candidate it weighed there; then :func:`blame` on the
recording. A run whose page has no wrong action at the drawn step, or that is won all the
same, is skipped (and counted).

Prints, per task type and in all: runs, the proven first bad step's exact accuracy beside the
judge-only guess's (rescore's rule on the recorded rewards), replays per run (mean, max),
against the budget, writes refused during replays, and whole replays that did not reproduce
the recorded outcome. No figure is asserted.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0, help="draws the faulted steps")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from webshepherd.integrations.blame import blame
    from webshepherd.integrations.browsergym import use_chromium

    os.environ["MINIWOB_URL"] = miniwob_agent.pages_url()
    use_chromium()
    rng = random.Random(args.seed)
    rows: list[dict[str, Any]] = []
    skipped = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, daemon_process(Path(tmp)) as daemon:
        i = 0
        while len(rows) < args.runs and i < args.runs * 3:
            task = miniwob_agent.TASKS[i % len(miniwob_agent.TASKS)]
            seed = 1 + i // len(miniwob_agent.TASKS)
            i += 1
            sid, won, at = miniwob_agent.record_faulted(
                daemon.url, daemon.token, daemon.data_dir, task, seed,
                lambda obs: rng.randrange(miniwob_agent.plan_length(obs)),
            )  # fmt: skip
            if won is not False or at is None:
                skipped += 1
                continue
            t0 = time.monotonic()
            got = blame(sid, miniwob_agent.make, data_dir=daemon.data_dir)
            row = {
                "task": task, "seed": seed, "injected": at, "found": got.first_bad_step,
                "proven": got.proven, "judge_guess": got.judge_guess, "replays": got.replays,
                "budget": got.budget, "refused": got.refused_writes,
                "reproduced": got.reproduced, "steps": got.steps,
                "seconds": round(time.monotonic() - t0, 1), "why": got.why,
            }  # fmt: skip
            rows.append(row)
            print(json.dumps(row), flush=True)
    report(rows, skipped, time.monotonic() - started)
    if args.json is not None:
        args.json.write_text(json.dumps({"runs": rows, "skipped": skipped}, indent=1) + "\n")


def report(rows: list[dict[str, Any]], skipped: int, seconds: float) -> None:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r["task"]].append(r)
    head = f"{'task':<18}{'runs':>5}{'proven exact':>14}{'judge exact':>13}"
    head += f"{'replays mean/max':>18}{'budget':>8}{'refused':>9}{'not reproduced':>16}"
    print(head)
    for task, rs in [*sorted(by.items()), ("all", rows)]:
        if not rs:
            continue
        exact = sum(r["proven"] and r["found"] == r["injected"] for r in rs)
        judge = sum(r["judge_guess"] == r["injected"] for r in rs)
        replays = [r["replays"] for r in rs]
        print(
            f"{task:<18}{len(rs):>5}{f'{exact}/{len(rs)}':>14}{f'{judge}/{len(rs)}':>13}"
            f"{f'{statistics.mean(replays):.1f}/{max(replays)}':>18}"
            f"{max(r['budget'] for r in rs):>8}{sum(r['refused'] for r in rs):>9}"
            f"{sum(r['reproduced'] is not True for r in rs):>16}"
        )
    print(
        f"runs skipped (no wrong action at the drawn step, or won anyway): {skipped}; "
        f"{seconds / 60:.1f} min in all"
    )


if __name__ == "__main__":
    main()
