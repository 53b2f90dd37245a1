"""Pick accuracy of the shipped tiny judge against one trained on a MiniWoB++ recording
(issue 48.3's closing figures).

    .venv-integrations/bin/python bench/judge_pick_accuracy.py [--train-seeds 3]
        [--heldout-seeds 1] [--type-seeds 2] [--out bench/results/judge-pick-accuracy]

Runs in the integrations venv (browsergym-miniwob; the ``miniwob`` package's task pages as
``file://`` pages); two daemons with the tiny judge (the integration tests' config, the main
venv's Python) record, one the training episodes, one the held-out ones. Each episode: the
scripted agent of tests/fixtures/miniwob_agent.py through ``ProcessRewardWrapper`` (the goal as
the episode's checklist), its right action run at every step and the page's wrong action
weighed beside it, both labelled as the env's truth (``session.label``: the right one
``in_progress``, ``yes`` at its last step; the wrong one ``no``). Then ``webshepherd train``
(docs/training.md's settings that move the tiny judge: ``--steps 8 --lr 1e-3 --batch-size 4``)
on the training recording alone, and ``webshepherd eval recorded`` with the shipped and the
trained judge on (a) held-out seeds of the trained task types and (b) task types never trained
on. Prints one table: per set, each judge's pick accuracy (the right candidate's reward
strictly first) and its unparsed outputs; writes it to ``OUT.txt`` and every figure to
``OUT.json``. No figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures import miniwob_agent  # noqa: E402
from tests.integrations.conftest import daemon_process  # noqa: E402

TRAINED = ("click-button", "enter-text", "login-user")
UNSEEN = ("enter-password", "click-option")
WEBSHEPHERD = ROOT / ".venv" / "bin" / "webshepherd"


def episode(url: str, token: str, data_dir: Path, task: str, seed: int) -> tuple[str, bool]:
    """One labelled episode of ``task``; its session id and whether the env was won, once the
    recording holds its outcome."""
    import browsergym.miniwob  # noqa: F401  (registers the ids)
    import gymnasium as gym
    from webshepherd.integrations.browsergym import ProcessRewardWrapper
    from webshepherd.integrations.replay import load

    env = ProcessRewardWrapper(
        gym.make(f"browsergym/miniwob.{task}", headless=True),
        url=url,
        token=token,
        checklist=lambda goal, _: [goal],
    )
    won = False
    obs: Any  # BrowserGym's observation, a dict as the scripted agent reads it
    try:
        obs, _ = env.reset(seed=seed)
        steps = miniwob_agent.plan_length(obs)
        agent = miniwob_agent.make()
        for i in range(steps + 2):
            right = agent.get_action(obs)[0]
            wrong = miniwob_agent.fault(obs) or "scroll(0, 100)"
            obs, reward, done, cut, info = env.step(right, candidates=[wrong])
            assert env.session is not None
            step = info["webshepherd"]["step"]
            env.session.label(step, right, ["yes" if i >= steps - 1 else "in_progress"])
            env.session.label(step, wrong, ["no"])
            if done or cut:
                won = bool(done and reward > 0)
                break
        assert env.session is not None
        sid = env.session.session_id
    finally:
        env.close()
    for _ in range(100):  # the recorder writes on its own thread
        if load(sid, data_dir).outcome is not None:
            break
        time.sleep(0.1)
    return sid, won


def record(
    base: Path, runs: list[tuple[str, int]], log: list[dict[str, Any]]
) -> tuple[Path, dict[tuple[str, int], str]]:
    """Record ``runs`` (task, seed) on a fresh daemon; its data dir and each run's session."""
    sids: dict[tuple[str, int], str] = {}
    with daemon_process(base) as daemon:
        for task, seed in runs:
            t0 = time.monotonic()
            sid, won = episode(daemon.url, daemon.token, daemon.data_dir, task, seed)
            sids[task, seed] = sid
            row = {"task": task, "seed": seed, "session": sid, "won": won}
            row["seconds"] = round(time.monotonic() - t0, 1)
            log.append(row)
            print(json.dumps(row), flush=True)
        return daemon.data_dir, sids


def webshepherd(*args: str) -> str:
    done = subprocess.run([str(WEBSHEPHERD), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"webshepherd {args[0]} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def evaluate(data_dir: Path, sids: list[str], judges: dict[str, str], out: Path) -> dict[str, Any]:
    """``eval recorded`` of ``judges`` (name: checkpoint) on ``sids``: its JSON report, each
    judge under its name (no machine paths)."""
    models = [a for j in judges.values() for a in ("--model", j)]
    webshepherd(
        "eval", "recorded", "--data-dir", str(data_dir), "--session", *sids, *models,
        "--device", "cpu", "--json", str(out), "--quiet",
    )  # fmt: skip
    text = out.read_text()
    for name, path in judges.items():
        text = text.replace(json.dumps(path), json.dumps(name))
    report: dict[str, Any] = json.loads(text)
    report.pop("recording", None)  # a temporary path
    return report


def table(sets: dict[str, dict[str, Any]]) -> list[str]:
    head = f"{'held out':<28}{'steps':>6}{'shipped pick':>14}{'unparsed':>10}"
    head += f"{'trained pick':>14}{'unparsed':>10}"
    lines = [head]
    for name, rep in sets.items():
        cells = f"{name:<28}{rep['steps']:>6}"
        for j in rep["judges"]:
            acc = j["pick_accuracy"]
            pick = f"{acc['right_first']}/{acc['steps']}"
            unparsed = f"{j['unparsed']}/{j['outputs']}"
            cells += f"{pick:>14}{unparsed:>10}"
        lines.append(cells)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--train-seeds", type=int, default=3, help="seeds 1.. per trained type")
    parser.add_argument("--heldout-seeds", type=int, default=1, help="next seeds, held out")
    parser.add_argument("--type-seeds", type=int, default=2, help="seeds per unseen type")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/judge-pick-accuracy")
    args = parser.parse_args()

    from webshepherd.integrations.browsergym import use_chromium

    os.environ["MINIWOB_URL"] = miniwob_agent.pages_url()
    use_chromium()
    n = args.train_seeds
    train = [(t, s) for s in range(1, n + 1) for t in TRAINED]
    seeds = [(t, s) for s in range(n + 1, n + 1 + args.heldout_seeds) for t in TRAINED]
    types = [(t, s) for s in range(1, 1 + args.type_seeds) for t in UNSEEN]
    tiny = webshepherd("dev", "tiny-model", "--quiet").strip()
    started = time.monotonic()
    log: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        train_dir, _ = record(base / "train", train, log)
        held_dir, held = record(base / "heldout", seeds + types, log)
        recorded_s = time.monotonic() - started
        trained = base / "trained"
        webshepherd(
            "train", "--base", tiny, "--data", str(train_dir), "--out", str(trained),
            "--steps", str(args.steps), "--lr", str(args.lr),
            "--batch-size", str(args.batch_size), "--device", "cpu", "--quiet",
        )  # fmt: skip
        trained_s = time.monotonic() - started - recorded_s
        sets: dict[str, dict[str, Any]] = {}
        for name, runs in (
            ("seeds of trained types", seeds),
            ("unseen task types", types),
        ):
            sids = [held[r] for r in runs]
            judges = {"shipped": tiny, "trained": str(trained)}
            sets[name] = evaluate(held_dir, sids, judges, base / "eval.json")
    lines = table(sets)
    lines.append(
        f"seeds of trained types: seeds {n + 1}-{n + args.heldout_seeds} of each; unseen task "
        f"types: {', '.join(UNSEEN)}, seeds 1-{args.type_seeds}; pick: the right candidate "
        "strictly first; unparsed: of the judge's outputs"
    )
    lines.append(
        f"trained on {len(train)} episodes (seeds 1-{n} of {', '.join(TRAINED)}), "
        f"--steps {args.steps} --lr {args.lr} --batch-size {args.batch_size}; recording "
        f"{recorded_s / 60:.1f} min, training {trained_s / 60:.1f} min, "
        f"{(time.monotonic() - started) / 60:.1f} min in all"
    )
    print("\n".join(lines))
    args.out.with_suffix(".txt").write_text("\n".join(lines) + "\n")
    result = {"episodes": log, "sets": sets, "table": lines}
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
