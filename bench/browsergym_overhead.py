"""What the BrowserGym wrapper adds to ``env.step`` on MiniWoB++, and where it goes (issue 48.4).

    .venv-integrations/bin/python bench/browsergym_overhead.py [--steps 20] [--json OUT]

Runs in the integrations venv (BrowserGym, ``browsergym-miniwob``, and ``miniwob``, whose
package ships the task pages, opened from disk); the daemon (the tiny judge on CPU, the
integration tests' config: tests/integrations/daemon_process.py) in the main venv
(``--daemon-python``); Debian's Chromium headless (``use_chromium``). Four envs of the same
MiniWoB task and seed (click-checkboxes: each step clicks a box, so every step does the same
work and the episode never ends):

- ``plain``: BrowserGym's env alone;
- ``webshepherd``: ``ProcessRewardWrapper`` as a MiniWoB user runs it (``approval="never"``,
  the browser's gate holding commits, no checklist given: the judge writes one at reset), each
  step with one other candidate: the score runs beside ``env.step``, the action and new page go
  on the wrapper's worker;
- ``decision first``: the same wrapper with ``approval="auto"`` (nobody is paired, so nothing
  is held, but the wrapper waits for the decision before the env steps): the serial cost;
- ``instant judge``: the overlapped wrapper against a second daemon whose scripted judge
  answers at once (a checklist given): the wrapper's own cost, the judge's left out.

They step in blocks of ``--block`` consecutive steps, rotating, for ``--steps`` timed steps
each; each block's first step is not timed (work the previous block left on the wrapper's worker
or in the daemon would land in another env's block). The wrapper's added time is the median of
its ``env.step`` wall times less the plain env's, in the same run.

The parts, measured in the same run: capture and serialization (BrowserGym's AX-tree flattening
and the screenshot's PNG, per observation), the daemon's round trip (``ping``), an action and an
observation sent and recorded (``act`` + ``observe`` on a scratch session), the judge's time as
the daemon recorded it for the wrapped steps (``queue_ms``, ``model_ms``), and the checklist:
its generation from ``reset()`` (fresh sessions, waited for) and the first step right after a
reset (fresh sessions, not waited for). Prints a table; ``--json OUT`` writes the figures and
``--table OUT`` the table. No figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # its siblings, as the other bench scripts import them

from miniwob_holds import recorded_timings, start_daemon, stop_daemon  # noqa: E402

from tests.fixtures.venvs import daemon_python  # noqa: E402
from tests.integrations.conftest import TEST_TOKEN as TOKEN  # noqa: E402

TASK = "click-checkboxes"
SEED = 7


def boxes(text: str) -> list[str]:
    found = re.findall(r"\[(\w+)\] checkbox", text)
    if not found:
        raise SystemExit(f"{TASK} showed no checkbox")
    return found


def median_ms(values: list[float]) -> float | None:
    return statistics.median(values) * 1000 if values else None


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    import browsergym.miniwob  # noqa: F401  (registers browsergym/miniwob.*)
    import gymnasium as gym
    import miniwob
    from webshepherd.integrations.browsergym import (
        ProcessRewardWrapper,
        observation_text,
        screenshot_png,
        use_chromium,
    )
    from webshepherd.protocol.client.sync import Client

    os.environ["MINIWOB_URL"] = (Path(miniwob.__file__).parent / "html" / "miniwob").as_uri() + "/"
    chromium = use_chromium()
    daemon, url = start_daemon(args.daemon_python, tmp / "daemon")
    instant = {"judge": {"default": [0.5, [1], "instant"]}}  # answers at once, writes no checklist
    scripted, scripted_url = start_daemon(args.daemon_python, tmp / "scripted", instant)

    def make() -> Any:
        return gym.make(
            f"browsergym/miniwob.{TASK}", pw_chromium_kwargs={"executable_path": chromium}
        )

    envs: dict[str, Any] = {
        "plain": make(),
        "webshepherd": ProcessRewardWrapper(make(), url=url, token=TOKEN),
        "decision first": ProcessRewardWrapper(make(), url=url, token=TOKEN, approval="auto"),
        "instant judge": ProcessRewardWrapper(
            make(), url=scripted_url, token=TOKEN, checklist=["Click the boxes"]
        ),
    }
    samples: dict[str, list[float]] = {name: [] for name in envs}
    parts: dict[str, list[float]] = {"flatten": [], "screenshot": []}
    first_steps: dict[str, list[float]] = {"plain": [], "webshepherd": []}
    checklist_s: list[float] = []
    no_reward = 0
    try:
        obs = {name: env.reset(seed=SEED)[0] for name, env in envs.items()}
        box = {name: boxes(observation_text(o))[0] for name, o in obs.items()}
        other = {name: boxes(observation_text(o))[-1] for name, o in obs.items()}
        blocks = -(-args.steps // (args.block - 1))
        for b in range(blocks):
            print(f"block {b + 1}/{blocks}", file=sys.stderr, flush=True)
            for name, env in envs.items():
                for i in range(args.block):
                    action = f"click('{box[name]}')"  # toggles the box: the same work each step
                    t0 = time.perf_counter()
                    if name == "plain":
                        got = env.step(action)
                    else:
                        got = env.step(action, candidates=[f"click('{other[name]}')"])
                    took = time.perf_counter() - t0
                    if i and len(samples[name]) < args.steps:
                        samples[name].append(took)
                    if name == "webshepherd":
                        no_reward += got[4]["webshepherd"]["reward"] is None
                    if name == "plain" and i:  # the capture's cost, off the clock
                        t1 = time.perf_counter()
                        text = observation_text(got[0])
                        parts["flatten"].append(time.perf_counter() - t1)
                        t1 = time.perf_counter()
                        screenshot_png(got[0])
                        parts["screenshot"].append(time.perf_counter() - t1)
        # the checklist: fresh sessions whose judge writes one from the goal
        wrapped = envs["webshepherd"]
        for r in range(args.resets):
            print(f"reset {r + 1}/{args.resets}", file=sys.stderr, flush=True)
            wrapped.reset(seed=SEED + 1 + r)
            t0 = time.perf_counter()
            wrapped.session.checklist(timeout=120)
            checklist_s.append(time.perf_counter() - t0)  # the rest of its generation
            for name in ("plain", "webshepherd"):
                o, _ = envs[name].reset(seed=SEED + 1 + r)
                t0 = time.perf_counter()
                envs[name].step(f"click('{boxes(observation_text(o))[0]}')")
                first_steps[name].append(time.perf_counter() - t0)
        # the daemon's round trip, and an action and a page sent and recorded
        with Client(url, TOKEN) as client:
            pings = [client.ping() for _ in range(20)]
            page = obs["plain"]
            session = client.start_session(
                "scratch", observation={"url": page["url"], "axtree": text}
            )
            shot = screenshot_png(page)
            recorded = timed(
                lambda: (
                    session.act("noop()"),
                    session.observe(page["url"], observation_text(page), shot),
                ),
                10,
            )
            session.end("unknown", "bench scratch session")
    finally:
        for env in envs.values():
            env.close()
        stop_daemon(daemon, wait_s=60)
        stop_daemon(scripted, wait_s=60)
    sessions = recorded_timings(tmp / "daemon")
    judged = sessions[0][1:] if sessions else []  # the overlapped session, after its first step
    plain = statistics.median(samples["plain"])
    out: dict[str, Any] = {
        "median_ms": {k: median_ms(v) for k, v in samples.items()},
        "added_ms": {
            k: (statistics.median(v) - plain) * 1000 for k, v in samples.items() if k != "plain"
        },
        "ratio": {k: statistics.median(v) / plain - 1 for k, v in samples.items() if k != "plain"},
        "samples_s": samples,
        "parts_ms": {
            "flatten AX tree": median_ms(parts["flatten"]),
            "screenshot PNG": median_ms(parts["screenshot"]),
            "daemon round trip (ping)": median_ms(pings),
            "act + observe, recorded": median_ms(recorded),
            "judge queue": statistics.median(t["queue_ms"] for t in judged) if judged else None,
            "judge model": statistics.median(t["model_ms"] for t in judged) if judged else None,
            "checklist after reset (waited)": median_ms(checklist_s),
        },
        "first_step_ms": {k: median_ms(v) for k, v in first_steps.items()},
        "wrapped_steps_without_reward": no_reward,
    }
    return out


def table(report: dict[str, Any]) -> str:
    r = report["results"]
    lines = [
        f"BrowserGym env.step on MiniWoB {TASK} (seed {SEED}), {report['steps']} timed steps per "
        f"env in blocks of {report['block']}, {report['machine']}, load {report['loadavg']}",
        f"judge: {report['model']}",
        "",
        f"{'env':34s} {'median env.step':>16s} {'added':>10s} {'':>8s}",
    ]
    for name, med in r["median_ms"].items():
        added = r["added_ms"].get(name)
        more = f"{added:+10.0f} {r['ratio'][name] * 100:+7.1f}%" if added is not None else ""
        lines.append(f"{name:34s} {med:13.0f} ms {more}")
    p = r["parts_ms"]
    first = r["first_step_ms"]
    rows = [
        ("capture: flatten AX tree", p["flatten AX tree"], "worker, beside the next step"),
        ("capture: screenshot as PNG", p["screenshot PNG"], "worker, beside the next step"),
        ("daemon round trip (ping)", p["daemon round trip (ping)"], "each call"),
        ("act + observe, sent and recorded", p["act + observe, recorded"], "worker"),
        ("judge: queue", p["judge queue"], "daemon, beside env.step"),
        ("judge: model (1 step, 2 candidates)", p["judge model"], "daemon, beside env.step"),
        (
            "checklist: generation after reset",
            p["checklist after reset (waited)"],
            "daemon, from reset()",
        ),
        ("first step after reset: plain", first["plain"], ""),
        ("first step after reset: webshepherd", first["webshepherd"], "waits for the checklist"),
    ]
    lines += ["", f"{'part (median)':38s} {'ms':>8s}  where it runs"]
    lines += [f"{k:38s} {'-' if v is None else f'{v:8.1f}'}  {w}" for k, v, w in rows]
    lines.append(f"wrapped steps without a reward: {r['wrapped_steps_without_reward']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per env")
    parser.add_argument("--block", type=int, default=3, help="consecutive steps per env")
    parser.add_argument("--resets", type=int, default=3, help="fresh sessions for the checklist")
    parser.add_argument("--daemon-python", default=daemon_python(), help="the main venv's")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--table", type=Path)
    args = parser.parse_args()
    if args.block < 2:
        parser.error("--block: at least 2 (each block's first step is not timed)")
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="browsergym-overhead-") as tmp:
        results = run(args, Path(tmp))
    report = {
        "steps": args.steps,
        "block": args.block,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "loadavg": [round(x, 1) for x in (*load, *os.getloadavg())],
        "model": "the tiny judge (tests/integrations/daemon_process.py's config), CPU",
        "results": results,
    }
    text = table(report)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if args.table:
        args.table.write_text(text + "\n")


if __name__ == "__main__":
    main()
