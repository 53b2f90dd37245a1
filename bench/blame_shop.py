"""``blame`` on the bundled shop's trap and on faulted runs of the shop (issue 50.4).

    .venv-integrations/bin/python bench/blame_shop.py [--faults 0,1,...,6] [--rounds 1]
        [--repeat 1] [--json OUT]

The shop is a BrowserGym task (:mod:`webshepherd.integrations.shop_task`, served by this
process at a free loopback port, ``$WEBSHEPHERD_SHOP_URL``); tests/fixtures/shop_agent.py's
scripted agent runs through ``ProcessRewardWrapper`` (the daemon: the tiny judge, the
integration tests' config, in the main venv), on the trap shop
(``browsergym/webshepherd.shop-trap``: a sold-out USB-C cable listed as the cheapest), with one
wrong action the agent does not repair injected at each step of ``--faults`` in turn
(``--rounds`` times), the agent's own action recorded as the candidate it weighed there. The
plan: fill the search, search, open the cheapest that can be ordered, add it, checkout, fill
the name, place the order; the wrong action at step 3 (``--faults`` counts from 0: 2) is the
trap, opening the decoy, on whose page the agent gives up; the others search for HDMI, give
up on the product's page, shop on from the cart (two items ordered), or fill another name.

Then :func:`blame` with the shop's origin as the replays' sandbox (the shop's writes, Add to
cart and Place order, must reach it for a replay to win), and once for the trap's run without
it: every write the replays try is refused and counted, and no try can win.

Prints blame_miniwob.py's table (per run type) and the trap without a sandbox. No figure is
asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # its siblings, as the other bench scripts import them

from blame_miniwob import per_rank, report, save  # noqa: E402

from tests.fixtures import shop_agent  # noqa: E402
from tests.integrations.conftest import daemon_process  # noqa: E402

TRAP = "browsergym/webshepherd.shop-trap"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--faults", default=",".join(map(str, range(shop_agent.PLAN))))
    parser.add_argument("--repeat", type=int, default=1, help="more whole replays per run")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    faults = [int(f) for f in args.faults.split(",") if f]

    from webshepherd.integrations.browsergym import use_chromium

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        shop = f"http://127.0.0.1:{s.getsockname()[1]}/"
    os.environ["WEBSHEPHERD_SHOP_URL"] = shop
    use_chromium()
    plan = [f for _ in range(args.rounds) for f in faults]
    rows: list[dict[str, Any]] = []
    skipped, errors, unsandboxed = 0, [], None
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, daemon_process(Path(tmp)) as daemon:
        for at in plan:
            try:
                row, sid = one_run(daemon, TRAP, at, shop, args.repeat)
                if row is not None and at == shop_agent.TRAP_STEP and unsandboxed is None:
                    unsandboxed = no_sandbox(daemon, sid)
                    print(json.dumps({"no_sandbox": unsandboxed}), flush=True)
            except Exception as exc:  # a page that did not load in time on a busy machine
                errors.append(f"fault at {at}: {type(exc).__name__}: {exc}"[:300])
                print(json.dumps({"fault": at, "error": errors[-1]}), flush=True)
                continue
            if row is None:
                skipped += 1
                continue
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.json is not None:
                save(args.json, rows, skipped, errors, time.monotonic() - started)
    seconds = time.monotonic() - started
    report(rows, skipped, seconds, len(errors))
    if unsandboxed is not None:
        print(
            f"the trap without a sandbox origin: first bad step {unsandboxed['found']}, "
            f"proven {unsandboxed['proven']}, {unsandboxed['replays']} replays, "
            f"{unsandboxed['refused']} writes refused ({unsandboxed['why']})"
        )
    if args.json is not None:
        save(args.json, rows, skipped, errors, seconds)
        got = json.loads(args.json.read_text())
        got["trap_without_sandbox"] = unsandboxed
        args.json.write_text(json.dumps(got, indent=1) + "\n")


def one_run(
    daemon: Any, task: str, at: int, shop: str, repeat: int
) -> tuple[dict[str, Any] | None, str]:
    """One run recorded and blamed with the shop as the sandbox (None: skipped, no wrong
    action at that step or won anyway)."""
    from webshepherd.integrations.blame import blame
    from webshepherd.integrations.replay import Replayer, load

    trap = at == shop_agent.TRAP_STEP  # on the results page, wherever it comes
    where = shop_agent.TRAP_PAGE if trap else at
    sid, won = shop_agent.record(daemon.url, daemon.token, daemon.data_dir, task, where)
    if won is not False:
        return None, sid
    rec = load(sid, daemon.data_dir)
    injected = shop_agent.decoy_step(rec) if trap else at
    t0 = time.monotonic()
    got = blame(sid, shop_agent.make, recorded=rec, sandbox=[shop])
    seconds = time.monotonic() - t0
    repeats = []
    if repeat:
        with Replayer(rec, sandbox=[shop]) as replayer:
            for _ in range(repeat):
                repeats.append(replayer.run(len(rec.steps), None, shop_agent.make))
    runs = [*got.evidence, *repeats]
    row = {
        "task": "the trap" if trap else "other faults", "seed": 0, "injected": injected,
        "found": got.first_bad_step, "proven": got.proven, "judge_guess": got.judge_guess,
        "replays": got.replays, "budget": got.budget, "refused": got.refused_writes,
        "reproduced": got.reproduced, "steps": got.steps,
        "repeats_reproduced": [not r.won and r.terminated and not r.drift for r in repeats],
        "per_rank_max": per_rank(got.evidence),
        "pages_checked": sum(r.checked for r in runs),
        "pages_drifted": sum(len(r.drift) for r in runs),
        "seconds": round(seconds, 1), "why": got.why,
    }  # fmt: skip
    return row, sid


def no_sandbox(daemon: Any, sid: str) -> dict[str, Any]:
    """Blame on the trap run with no sandbox origin: the shop's writes are refused."""
    from webshepherd.integrations.blame import blame

    got = blame(sid, shop_agent.make, data_dir=daemon.data_dir)
    return {
        "found": got.first_bad_step, "proven": got.proven, "replays": got.replays,
        "refused": got.refused_writes, "why": got.why,
    }  # fmt: skip


if __name__ == "__main__":
    main()
