"""What holds on MiniWoB++ (issue 41.7) and what the BrowserGym wrapper costs there (issue 44.6).

    .venv/bin/python bench/miniwob_holds.py [--tasks 20] [--steps 8] [--json OUT]

Runs in the main venv; the ``wrapper`` section runs itself again in the integrations venv
(``--integrations-python``: browsergym-miniwob and ``miniwob``, whose package ships the MiniWoB++
task pages, opened as ``file://`` pages straight from it); the daemon (tiny model, the
integration tests' fast config) in the main venv; Debian's Chromium headless. Sections
(``--only``):

- ``finals``: each task's final control, the one whose click ends the episode (MiniWoB's
  ``#subbtn`` where the page has one, else the first button or link whose click ends it, each
  tried on a fresh episode of the same seed), captured by the extension (AX tree and element
  facts, as the daemon receives them) and judged by the daemon's own ``guard_hits`` under the
  previous default (all four rules, ``name_match`` with ``DEFAULT_WORDS``) and the new one
  (``name_match`` off); then clicked, counting the requests it sends that
  ``protocol.commits.commit_kind`` calls commits: what a browser gate holds.
- ``wrapper``: ``env.step`` of a plain BrowserGym MiniWoB env and of a ``ProcessRewardWrapper``
  env (no reference checklist: the judge writes one from the goal, as on MiniWoB), alternating
  step by step, each step a click on one of click-checkboxes' boxes; the daemon's recorded
  ``queue_ms`` / ``model_ms`` of the wrapped steps (one agent connected).

Prints the figures side by side; ``--json OUT`` writes them. No figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
TOKEN = "test-token-webshepherd-0123456789"  # tests/fixtures/daemon.py's
SEED = 7
#: AX-tree roles a final control may have when the page has no ``#subbtn``
CLICKABLE = ("button", "link", "menuitem", "tab", "option", "gridcell")
_LINE = re.compile(r"^\s*\[([^\]\s]+)\]\s+(\S+)")


def miniwob_pages(python: str) -> Path:
    """The task pages (``html/miniwob``) of the ``miniwob`` package installed for ``python``."""
    proc = subprocess.run(
        [python, "-c", "import miniwob, pathlib; print(pathlib.Path(miniwob.__file__).parent)"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(
            f"no `miniwob` package for {python}: {python} -m pip install miniwob "
            "(it ships the MiniWoB++ task pages; `make test` installs it in .venv-integrations)"
        )
    pages = Path(proc.stdout.strip()) / "html" / "miniwob"
    if not (pages / "click-button.html").exists():
        raise SystemExit(f"no MiniWoB++ task pages in {pages}")
    return pages


def pick_tasks(pages: Path, n: int) -> list[str]:
    """``n`` task names spread evenly over the sorted list (all of them when n exceeds it)."""
    names = sorted(p.stem for p in pages.glob("*.html"))
    if n <= 0:
        raise SystemExit("--tasks: at least 1")
    if n >= len(names):
        return names
    return [names[i * len(names) // n] for i in range(n)]


# -- finals: what the rules and a browser gate stop ---------------------------------------


@dataclass
class Final:
    task: str
    found: bool
    bid: str | None = None
    role: str | None = None
    name: str | None = None
    how: str = ""  # "subbtn" or "tried N"
    old_rules: list[str] = field(default_factory=list)
    new_rules: list[str] = field(default_factory=list)
    gate: list[str] = field(default_factory=list)  # commit kinds of the requests it sent
    reward: float | None = None
    error: str | None = None


def start_episode(page: Any, url: str, seed: int) -> None:
    page.goto(url)
    page.evaluate(
        f"Math.seedrandom({seed}); core.EPISODE_MAX_TIME = 600000; core.startEpisodeReal();"
    )
    page.wait_for_function("() => WOB_TASK_READY", timeout=10_000)


def final_control(context: Any, pages: Path, task: str, tries: int) -> Final:
    """The task's final control, judged by both policies and clicked under watch."""
    from webshepherd.daemon.sessions.guards import ALL_RULES, GuardPolicy, ax_line, guard_hits
    from webshepherd.integrations.playwright import page_observation
    from webshepherd.protocol.commits import commit_kind, url_origin

    old, new = GuardPolicy(rules=frozenset(ALL_RULES)), GuardPolicy()
    url = (pages / f"{task}.html").as_uri()
    page = context.new_page()
    try:
        start_episode(page, url, SEED)
        obs = page_observation(page)
        sub = page.evaluate(
            "(() => { const b = document.querySelector('#subbtn');"
            " return b ? b.getAttribute('bid') : null; })()"
        )
        if sub:
            bids, how = [sub], "subbtn"
        else:
            bids = [
                m.group(1)
                for line in obs.axtree.splitlines()
                if (m := _LINE.match(line)) and m.group(2) in CLICKABLE
            ][:tries]
            how = "tried"
        for n, bid in enumerate(bids):
            if n:  # a fresh episode of the same seed: the same page, the same bids
                start_episode(page, url, SEED)
                obs = page_observation(page)
            sent: list[tuple[str, str, bool]] = []

            def on_request(req: Any, sent: list[tuple[str, str, bool]] = sent) -> None:
                top = req.is_navigation_request() and req.frame == page.main_frame
                sent.append((req.method, req.url, top))

            downloads: list[Any] = []

            def on_download(d: Any, downloads: list[Any] = downloads) -> None:
                downloads.append(d)

            page.on("request", on_request)
            page.on("download", on_download)
            try:
                page.click(f'[bid="{bid}"]', timeout=3000)
                page.wait_for_timeout(100)
            except Exception:
                continue  # not clickable (hidden, covered): the next one
            finally:
                page.remove_listener("request", on_request)
                page.remove_listener("download", on_download)
            done, reward = page.evaluate("[WOB_DONE_GLOBAL, WOB_RAW_REWARD_GLOBAL]")
            if not done:
                continue
            action = f"click('{bid}')"
            origin = url_origin(url)
            kinds = [
                kind
                for method, u, top in sent
                if (kind := commit_kind(method, u, top_level_navigation=top, session_origin=origin))
            ] + ["download"] * len(downloads)
            role, name = ax_line(obs.axtree, bid)

            def rules(policy: GuardPolicy, obs: Any = obs, action: str = action) -> list[str]:
                hits = guard_hits(
                    policy,
                    action,
                    url=obs.url,
                    axtree=obs.axtree,
                    elements=obs.elements,
                    origin=None,  # file:// has no http(s) origin: no rule reads one
                )
                return [h.rule for h in hits]

            return Final(
                task,
                True,
                bid,
                role,
                name,
                how if how == "subbtn" else f"tried {n + 1}",
                rules(old),
                rules(new),
                kinds,
                float(reward),
            )
        return Final(task, False, how=f"{how} {len(bids)}")
    except Exception as exc:  # a page that does not start (drag tasks' timing, ...): counted
        return Final(task, False, error=f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
    finally:
        page.close()


def finals(tasks: list[str], pages: Path, tries: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright
    from tqdm import tqdm
    from webshepherd.integrations.playwright import launch

    out: list[Final] = []
    with sync_playwright() as pw:
        context = launch(pw, chromium=CHROMIUM)
        try:
            for task in tqdm(tasks, desc="final controls", file=sys.stderr):
                out.append(final_control(context, pages, task, tries))
        finally:
            context.close()
    found = [f for f in out if f.found]
    return {
        "tasks": len(out),
        "found": len(found),
        "old_stopped": sum(bool(f.old_rules) for f in found),
        "new_stopped": sum(bool(f.new_rules) for f in found),
        "gate_held": sum(bool(f.gate) for f in found),
        "old_by_rule": dict(Counter(r for f in found for r in f.old_rules)),
        "new_by_rule": dict(Counter(r for f in found for r in f.new_rules)),
        "gate_by_kind": dict(Counter(k for f in found for k in f.gate)),
        "per_task": [asdict(f) for f in out],
    }


# -- wrapper: the BrowserGym wrapper's cost per step ----------------------------------------


def start_daemon(python: str, base: Path) -> tuple[subprocess.Popen[str], str]:
    """The integration tests' daemon (tiny model) in the main venv; its URL."""
    proc = subprocess.Popen(
        [python, "-m", "tests.integrations.daemon_process", str(base)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise SystemExit("the daemon exited before listening")
    return proc, json.loads(line)["url"]


def stop_daemon(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def checkbox_bid(obs: dict[str, Any]) -> str:
    from webshepherd.integrations.browsergym import observation_text

    m = re.search(r"\[([^\]\s]+)\] checkbox", observation_text(obs))
    if m is None:
        raise SystemExit("click-checkboxes showed no checkbox")
    return m.group(1)


def recorded_timings(data_dir: Path) -> list[dict[str, float]]:
    """queue_ms / model_ms of every score request the daemon recorded, in order."""
    rows: list[dict[str, float]] = []
    for db in sorted(data_dir.rglob("*.sqlite*")) + sorted(data_dir.rglob("*.db")):
        if db.suffix not in (".sqlite", ".sqlite3", ".db"):
            continue
        con = sqlite3.connect(db)
        try:
            got = con.execute("SELECT queue_ms, model_ms FROM score_requests ORDER BY id").fetchall()
        except sqlite3.Error:
            continue
        finally:
            con.close()
        rows += [{"queue_ms": q, "model_ms": m} for q, m in got if q is not None]
    return rows


def wrapper(pages: Path, steps: int, daemon_python: str, tmp: Path) -> dict[str, Any]:
    from browsergym.core.env import BrowserEnv
    from browsergym.miniwob.all import ClickCheckboxesTask
    from tqdm import tqdm
    from webshepherd.integrations.browsergym import ProcessRewardWrapper

    os.environ["MINIWOB_URL"] = pages.as_uri() + "/"
    daemon, url = start_daemon(daemon_python, tmp / "daemon")

    def make() -> Any:
        return BrowserEnv(
            task_entrypoint=ClickCheckboxesTask,
            headless=True,
            pw_chromium_kwargs={"executable_path": CHROMIUM},
        )

    plain = make()
    wrapped = ProcessRewardWrapper(make(), url=url, token=TOKEN)
    samples: dict[str, list[float]] = {"plain": [], "webshepherd": []}
    try:
        obs_p, _ = plain.reset(seed=SEED)
        obs_w, _ = wrapped.reset(seed=SEED)
        bids = {"plain": checkbox_bid(obs_p), "webshepherd": checkbox_bid(obs_w)}
        for i in tqdm(range(steps + 1), desc="wrapper steps", file=sys.stderr):
            for name, env in (("plain", plain), ("webshepherd", wrapped)):
                t0 = time.perf_counter()
                env.step(f"click('{bids[name]}')")  # toggles the box: the same work each step
                if i:  # the first step of each is a warm-up
                    samples[name].append(time.perf_counter() - t0)
    finally:
        plain.close()
        wrapped.close()
        stop_daemon(daemon)
    timings = recorded_timings(tmp / "daemon")
    med = {k: statistics.median(v) for k, v in samples.items()}
    after_first = timings[1:]  # the first score also waits for the checklist's generation
    return {
        "median_s": med,
        "ratio": med["webshepherd"] / med["plain"],
        "overhead_s": med["webshepherd"] - med["plain"],
        "samples_s": samples,
        "daemon_timings": timings,
        "queue_ms_median": statistics.median(t["queue_ms"] for t in after_first)
        if after_first
        else None,
        "model_ms_median": statistics.median(t["model_ms"] for t in after_first)
        if after_first
        else None,
        "first_queue_ms": timings[0]["queue_ms"] if timings else None,
    }


def wrapper_child(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """The ``wrapper`` section, run by the integrations venv's Python (BrowserGym is there)."""
    cmd = [args.integrations_python, str(Path(__file__).resolve()), "--wrapper-only", str(out)]
    cmd += ["--steps", str(args.steps), "--daemon-python", args.daemon_python]
    proc = subprocess.run(cmd, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"the wrapper section failed (exit {proc.returncode})")
    result: dict[str, Any] = json.loads(out.read_text("utf-8"))
    return result


# -- the printed table ---------------------------------------------------------------------


def print_report(report: dict[str, Any]) -> None:
    if "finals" in report:
        f = report["finals"]
        n = f["found"]
        print(f"MiniWoB++ final controls: {n} of {f['tasks']} tasks' found and clicked")
        print(f"{'':34s} {'stopped':>8s}  by rule / kind")
        for label, key, by in (
            ("previous rules (name_match on)", "old_stopped", "old_by_rule"),
            ("new rules, no gate (names off)", "new_stopped", "new_by_rule"),
            ("browser gate (what it sent)", "gate_held", "gate_by_kind"),
        ):
            rules = ", ".join(f"{k} {v}" for k, v in sorted(f[by].items())) or "-"
            print(f"{label:34s} {f[key]:>3d} / {n:<3d}  {rules}")
        missed = [t["task"] for t in f["per_task"] if not t["found"]]
        if missed:
            print(f"no final control found: {', '.join(missed)}")
    if "wrapper" in report:
        w = report["wrapper"]
        m = w["median_s"]
        print(
            f"BrowserGym env.step on click-checkboxes: plain {m['plain'] * 1000:.0f} ms, "
            f"ProcessRewardWrapper {m['webshepherd'] * 1000:.0f} ms "
            f"(+{w['overhead_s'] * 1000:.0f} ms, x{w['ratio']:.2f})"
        )
        if w["queue_ms_median"] is not None:
            print(
                f"daemon, one agent: queue_ms median {w['queue_ms_median']:.1f}, "
                f"model_ms median {w['model_ms_median']:.0f} (steps 2..); "
                f"first step's queue_ms {w['first_queue_ms']:.0f}"
            )
    print(f"load average before {report['loadavg_before']}, after {report['loadavg_after']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=20, help="MiniWoB++ tasks (spread evenly)")
    parser.add_argument("--tries", type=int, default=6, help="controls tried per task")
    parser.add_argument("--steps", type=int, default=8, help="timed env steps per side")
    parser.add_argument("--only", nargs="*", default=["finals", "wrapper"])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--daemon-python", default=str(ROOT / ".venv" / "bin" / "python"))
    parser.add_argument(
        "--integrations-python", default=str(ROOT / ".venv-integrations" / "bin" / "python")
    )
    parser.add_argument("--wrapper-only", type=Path, help=argparse.SUPPRESS)  # the child's JSON
    args = parser.parse_args()
    unknown = set(args.only) - {"finals", "wrapper"}
    if unknown:
        raise SystemExit(f"--only: unknown section {sorted(unknown)[0]!r}; known: finals, wrapper")
    if args.wrapper_only:  # the child, in the integrations venv
        with tempfile.TemporaryDirectory() as tmp_name:
            res = wrapper(miniwob_pages(sys.executable), args.steps, args.daemon_python, Path(tmp_name))
        args.wrapper_only.write_text(json.dumps(res))
        return
    pages = miniwob_pages(args.integrations_python)
    report: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "loadavg_before": os.getloadavg(),
        "seed": SEED,
    }
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if "finals" in args.only:
            report["finals"] = finals(pick_tasks(pages, args.tasks), pages, args.tries)
        if "wrapper" in args.only:
            report["wrapper"] = wrapper_child(args, tmp / "wrapper.json")
    report["loadavg_after"] = os.getloadavg()
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
