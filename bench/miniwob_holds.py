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
import contextlib
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
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from webshepherd.integrations.browsergym import BrowserGymObs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
TOKEN = "test-token-webshepherd-0123456789"  # tests/fixtures/daemon.py's
SEED = 7
#: AX-tree roles a final control may have when the page has no ``#subbtn``
CLICKABLE = ("button", "link", "menuitem", "tab", "option", "gridcell")
_LINE = re.compile(r"^\s*\[([^\]\s]+)\]\s+(\S+)")
SECTIONS = ("finals", "writes", "latency", "wrapper")


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
    from webshepherd.daemon.sessions.guards import (
        ALL_RULES,
        GuardPolicy,
        ax_line,
        guard_hits,
        session_origin,
    )
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
                str(kind)
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
                    origin=session_origin(url),  # as the daemon's session has it: file://
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


# -- writes: fixture pages that write, under the previous rules and under a browser gate ----


def answer(request: Any, status: Literal["approved", "rejected"], session_id: str = "bench") -> Any:
    """A ``commit.decided`` about ``request``: approved or rejected at once (no daemon)."""
    from webshepherd.protocol.commits import request_digest
    from webshepherd.protocol.common import DecisionInfo
    from webshepherd.protocol.replies import CommitDecided

    return CommitDecided(
        session_id=session_id,
        request=request,
        request_digest=request_digest(request),
        decision=DecisionInfo(status=status, by="bench", decider="mode", mode="stop"),
    )


def settle(page: Any, servers: Any, ms: int = 600) -> None:
    """Let a page's requests go out (a delayed submit waits 300 ms) and reach the servers."""
    page.wait_for_timeout(ms)


def trigger_action(page: Any, wp: Any) -> str:
    """The BrowserGym action of the page's trigger, by the bid the capture gave it."""
    bid = page.evaluate("document.querySelector('#go').getAttribute('bid')")
    if wp.how == "select":
        return f"select_option('{bid}', '{wp.option}')"
    return f"click('{bid}')"


def writes() -> dict[str, Any]:
    """Each fixture page's trigger: the rules' verdict on it (old, new) from the extension's
    capture, what reaches the servers with no gate, and with a gate that refuses."""
    from playwright.sync_api import sync_playwright
    from tqdm import tqdm
    from webshepherd.daemon.sessions.guards import ALL_RULES, GuardPolicy, guard_hits
    from webshepherd.integrations.commit_gate import CommitGate
    from webshepherd.integrations.playwright import launch, page_observation
    from webshepherd.protocol.commits import url_origin

    from tests.fixtures.write_pages import ALL_PAGES, WriteServers

    old, new = GuardPolicy(rules=frozenset(ALL_RULES)), GuardPolicy()
    rows: list[dict[str, Any]] = []
    with sync_playwright() as pw, WriteServers() as servers:
        context = launch(pw, chromium=CHROMIUM)
        try:
            for wp in tqdm(ALL_PAGES, desc="write pages", file=sys.stderr):
                page = context.new_page()
                try:
                    page.goto(servers.url(wp))
                    obs = page_observation(page)
                    action = trigger_action(page, wp)
                    verdicts = {
                        label: [
                            h.rule
                            for h in guard_hits(
                                policy,
                                action,
                                url=obs.url,
                                axtree=obs.axtree,
                                elements=obs.elements,
                                origin=url_origin(servers.home),
                            )
                        ]
                        for label, policy in (("old", old), ("new", new))
                    }
                    servers.clear()
                    saved: list[Any] = []
                    page.on("download", _keeper(saved))
                    wp.act(page)
                    settle(page, servers)
                    open_sent = sum(servers.count(e) for e in wp.sends) + len(saved)
                finally:
                    page.close()
                # the same trigger with the gate attached, refusing whatever it holds
                page = context.new_page()
                gate = CommitGate(lambda r: answer(r, "rejected"))
                try:
                    page.goto(servers.url(wp))
                    gate.attach(context, start_url=servers.home)
                    servers.clear()
                    saved = []
                    page.on("download", _keeper(saved))
                    gate.trigger(action)
                    # a refused navigation may fail the click's own wait: what left is counted
                    with contextlib.suppress(Exception):
                        wp.act(page)
                    settle(page, servers)
                    # a gated context's files: those it released (Playwright still reports
                    # each download it begins, into the gate's private folder)
                    gated_sent = sum(servers.count(e) for e in wp.held) + len(gate.saved)
                    held = [d.request.kind for d in gate.take_decisions()]
                finally:
                    gate.detach()
                    page.close()
                rows.append(
                    {
                        "page": wp.name,
                        "kind": wp.kind,
                        "action": action,
                        "old_rules": verdicts["old"],
                        "new_rules": verdicts["new"],
                        "sent_without_gate": open_sent,
                        "sent_with_gate": gated_sent,
                        "gate_held": held,
                    }
                )
        finally:
            context.close()
    committing = [r for r in rows if r["kind"] is not None]
    harmless = [r for r in rows if r["kind"] is None]
    return {
        "pages": rows,
        "writes": len(committing),
        "old_unheld": sum(not r["old_rules"] for r in committing),
        "new_rules_unheld": sum(not r["new_rules"] for r in committing),
        "gate_unheld": sum(not r["gate_held"] for r in committing),
        "harmless": len(harmless),
        "old_harmless_stopped": sum(bool(r["old_rules"]) for r in harmless),
        "gate_harmless_held": sum(bool(r["gate_held"]) for r in harmless),
    }


# -- latency: a held request approved at once vs the same request unheld ---------------------

#: The fixture's POST, sent by the page and timed there (performance.now around the fetch).
TIMED_POST = """async () => {
  const t = performance.now();
  const r = await fetch('/api/order', {method: 'POST', headers: {'Content-Type':
    'application/json'}, body: JSON.stringify({item: 'usb-c cable', qty: 2})});
  await r.text();
  return performance.now() - t;
}"""
TIMED_GET = TIMED_POST.replace("method: 'POST'", "method: 'GET'").replace(
    ", body: JSON.stringify({item: 'usb-c cable', qty: 2})", ""
)


def serve_daemon(base: Path, mode: str) -> None:
    """A daemon (tiny model, the tests' settings, ``mode``) until stdin closes; prints its URL."""
    import asyncio
    from dataclasses import replace

    from webshepherd.daemon.build import running_daemon
    from webshepherd.daemon.config import ModelSettings
    from webshepherd.daemon.dev.tiny_model import ensure_tiny_model

    from tests.fixtures.daemon import make_settings

    async def run() -> None:
        settings = make_settings(base, mode=mode)
        model = ModelSettings(str(ensure_tiny_model(progress=False)), device="cpu")
        async with running_daemon(replace(settings, model=model)) as server:
            print(json.dumps({"url": server.url}), flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

    asyncio.run(run())


def latency(repeats: int, tmp: Path) -> dict[str, Any]:
    """The fixture's POST timed in the page: unheld, held and approved at once by a local
    decide, held and asked of a watch-mode daemon; and a GET, with and without the gate."""
    from playwright.sync_api import sync_playwright
    from tqdm import tqdm
    from webshepherd.integrations.commit_gate import CommitGate
    from webshepherd.protocol.client.sync import Client

    from tests.fixtures.write_pages import FETCH_POST, WriteServers

    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--serve-daemon", str(tmp / "watch")],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise SystemExit("the watch-mode daemon exited before listening")
    url = json.loads(line)["url"]
    samples: dict[str, list[float]] = {
        "POST unheld": [],
        "POST held, local approve": [],
        "POST held, watch daemon": [],
        "GET, no gate": [],
        "GET through the gate": [],
    }
    flagged: list[bool] = []
    try:
        with sync_playwright() as pw, WriteServers() as servers, Client(url, TOKEN) as client:
            session = client.start_session(
                "time a held request",
                start_url=servers.home,
                checklist="Checklist 1: Send the order",
                holds="browser",
                agent="bench",
            )
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
            try:
                contexts = {}
                for name in samples:
                    ctx = browser.new_context()
                    page = ctx.new_page()
                    page.goto(servers.url(FETCH_POST))
                    if name == "POST held, local approve" or name == "GET through the gate":
                        gate = CommitGate(lambda r: answer(r, "approved"))
                        gate.attach(ctx, start_url=servers.home)
                    elif name == "POST held, watch daemon":
                        gate = CommitGate(session.commit_check, session_id=session.session_id)
                        gate.attach(ctx, start_url=servers.home)
                    else:
                        gate = None
                    contexts[name] = (ctx, page, gate)
                for i in tqdm(range(repeats + 1), desc="held requests", file=sys.stderr):
                    for name, (_, page, gate) in contexts.items():
                        ms = page.evaluate(TIMED_GET if name.startswith("GET") else TIMED_POST)
                        if gate is not None:
                            decided = gate.take_decisions()
                            if name.startswith("POST") and not decided:
                                raise SystemExit(f"{name}: the gate held nothing")
                            flagged += [d.flagged for d in decided if "watch" in name]
                        if i:  # the first of each is a warm-up
                            samples[name].append(float(ms))
                for ctx, _, gate in contexts.values():
                    if gate is not None:
                        gate.detach()
                    ctx.close()
            finally:
                browser.close()
            session.end("unknown")
    finally:
        stop_daemon(proc)
    med = {k: statistics.median(v) for k, v in samples.items()}
    return {
        "median_ms": med,
        "added_ms": {
            "local approve": med["POST held, local approve"] - med["POST unheld"],
            "watch daemon": med["POST held, watch daemon"] - med["POST unheld"],
            "GET through the gate": med["GET through the gate"] - med["GET, no gate"],
        },
        "watch_flagged": all(flagged) and bool(flagged),
        "samples_ms": samples,
    }


# -- wrapper: the BrowserGym wrapper's cost per step ----------------------------------------


def start_daemon(
    python: str, base: Path, spec: dict[str, Any] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """The integration tests' daemon in the main venv (the tiny judge; ``spec``: a scripted
    one, tests/integrations/daemon_process.py); its URL."""
    argv = [python, "-m", "tests.integrations.daemon_process", str(base)]
    proc = subprocess.Popen(
        [*argv, json.dumps(spec)] if spec else argv,
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


def stop_daemon(proc: subprocess.Popen[str], wait_s: float = 30) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    try:
        proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _keeper(saved: list[Any]) -> Callable[[object], None]:
    """A handler that keeps what it is given in ``saved`` (the downloads a page reports)."""

    def keep(item: object) -> None:
        saved.append(item)

    return keep


def checkbox_bid(obs: BrowserGymObs) -> str:
    from webshepherd.integrations.browsergym import observation_text

    m = re.search(r"\[([^\]\s]+)\] checkbox", observation_text(obs))
    if m is None:
        raise SystemExit("click-checkboxes showed no checkbox")
    return m.group(1)


def recorded_timings(data_dir: Path) -> list[list[dict[str, float]]]:
    """queue_ms / model_ms of the score requests the daemon recorded: one list per session,
    sessions in the order they started, each in its steps' order."""
    sessions: dict[str, list[dict[str, float]]] = {}
    for db in sorted(data_dir.rglob("*")):
        if db.suffix not in (".sqlite", ".sqlite3", ".db"):
            continue
        con = sqlite3.connect(db)
        try:
            got = con.execute(
                "SELECT session_id, queue_ms, model_ms FROM score_requests ORDER BY id"
            ).fetchall()
        except sqlite3.Error:
            continue
        finally:
            con.close()
        for sid, q, m in got:
            if q is not None:
                sessions.setdefault(sid, []).append({"queue_ms": q, "model_ms": m})
    return list(sessions.values())


def wrapper(pages: Path, steps: int, resets: int, daemon_python: str, tmp: Path) -> dict[str, Any]:
    """Plain vs wrapped ``env.step`` alternating (one agent: the wrapped env's session), then
    ``resets`` fresh sessions stepped twice right after reset; the daemon's recorded timings."""
    from browsergym.core.env import BrowserEnv
    from browsergym.miniwob.all import ClickCheckboxesTask
    from tqdm import tqdm
    from webshepherd.integrations.browsergym import ProcessRewardWrapper

    os.environ["MINIWOB_URL"] = pages.as_uri() + "/"
    # BrowserGym's chat window launches playwright 1.44's default Chromium: Debian's instead
    chrome = tmp / "ms-playwright" / "chromium-1117" / "chrome-linux" / "chrome"
    chrome.parent.mkdir(parents=True, exist_ok=True)
    chrome.symlink_to(os.path.realpath(CHROMIUM))
    os.environ["PLAYWRIGHT_BROWSERS_PATH"] = str(tmp / "ms-playwright")
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
    no_result = steady_no_result = 0
    try:
        obs_p, _ = plain.reset(seed=SEED)
        obs_w, _ = wrapped.reset(seed=SEED)
        bids = {"plain": checkbox_bid(obs_p), "webshepherd": checkbox_bid(obs_w)}
        for i in tqdm(range(steps + 1), desc="wrapper steps", file=sys.stderr):
            for name, env in (("plain", plain), ("webshepherd", wrapped)):
                t0 = time.perf_counter()
                res = env.step(f"click('{bids[name]}')")  # toggles the box: the same work
                if i:  # the first step of each is a warm-up
                    samples[name].append(time.perf_counter() - t0)
                    if name == "webshepherd":  # a step the judge gave no reward (no checklist)
                        steady_no_result += res[4]["webshepherd"]["reward"] is None
        # fresh sessions stepped as soon as reset returns: the first score queues behind the
        # session's checklist generation (no reference checklist, as on MiniWoB)
        for r in tqdm(range(resets), desc="steps right after reset", file=sys.stderr):
            obs, _ = wrapped.reset(seed=SEED + 1 + r)
            bid = checkbox_bid(obs)
            for _ in range(2):
                *_, info = wrapped.step(f"click('{bid}')")
                no_result += info["webshepherd"]["reward"] is None
    finally:
        plain.close()
        wrapped.close()
        stop_daemon(daemon)
    sessions = recorded_timings(tmp / "daemon")
    steady = sessions[0][1:] if sessions else []  # the alternating session, after its warm-up
    fresh = sessions[1:]
    med = {k: statistics.median(v) for k, v in samples.items()}
    return {
        "median_s": med,
        "ratio": med["webshepherd"] / med["plain"],
        "overhead_s": med["webshepherd"] - med["plain"],
        "samples_s": samples,
        "daemon_timings": sessions,
        "queue_ms_median": statistics.median(t["queue_ms"] for t in steady) if steady else None,
        "model_ms_median": statistics.median(t["model_ms"] for t in steady) if steady else None,
        "queue_ms_max": max(t["queue_ms"] for t in steady) if steady else None,
        "fresh_first_queue_ms": [s[0]["queue_ms"] for s in fresh if s],
        "fresh_second_queue_ms": [s[1]["queue_ms"] for s in fresh if len(s) > 1],
        "fresh_no_result": no_result,
        "steady_no_result": steady_no_result,
    }


def wrapper_child(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """The ``wrapper`` section, run by the integrations venv's Python (BrowserGym is there)."""
    cmd = [args.integrations_python, str(Path(__file__).resolve()), "--wrapper-only", str(out)]
    cmd += ["--steps", str(args.steps), "--resets", str(args.resets)]
    cmd += ["--daemon-python", args.daemon_python]
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
            print(f"no one-click final control: {', '.join(missed)}")
    if "writes" in report:
        w = report["writes"]
        n = w["writes"]
        print(f"fixture writes ({n} pages that commit, {w['harmless']} harmless):")
        for label, key in (
            ("previous rules (name_match on)", "old_unheld"),
            ("new rules without a gate", "new_rules_unheld"),
            ("browser gate", "gate_unheld"),
        ):
            print(f"  leave the browser unheld, {label:31s} {w[key]:>2d} / {n}")
        print(
            f"  harmless pages stopped by the previous rules {w['old_harmless_stopped']} / "
            f"{w['harmless']}, held by the gate {w['gate_harmless_held']} / {w['harmless']}"
        )
        print(f"    {'page':18s} {'kind':10s} {'previous rules':28s} {'gate holds':10s} left")
        for r in w["pages"]:
            old = ",".join(r["old_rules"]) or "-"
            held = ",".join(r["gate_held"]) or "-"
            print(
                f"    {r['page']:18s} {r['kind'] or '-':10s} {old:28s} {held:10s} "
                f"{r['sent_without_gate']} ungated, {r['sent_with_gate']} gated (refusing)"
            )
    if "latency" in report:
        lat = report["latency"]
        print("a request timed in the page (fetch to response read), median ms:")
        for k, v in lat["median_ms"].items():
            print(f"  {k:26s} {v:7.1f}")
        a = lat["added_ms"]
        print(
            f"  added by holding: local approve +{a['local approve']:.1f} ms, watch-mode daemon "
            f"+{a['watch daemon']:.1f} ms (flagged: {lat['watch_flagged']}); "
            f"a GET through the gate +{a['GET through the gate']:.1f} ms"
        )
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
                f"daemon, one agent: queue_ms median {w['queue_ms_median']:.1f} "
                f"(max {w['queue_ms_max']:.1f}), model_ms median {w['model_ms_median']:.0f}; "
                f"steps with no reward {w['steady_no_result']} of {len(w['samples_s']['plain'])}"
            )
        first = ", ".join(f"{q:.0f}" for q in w["fresh_first_queue_ms"])
        second = ", ".join(f"{q:.0f}" for q in w["fresh_second_queue_ms"])
        print(
            f"stepped right after reset: first score's queue_ms {first or '-'}; second's "
            f"{second or '-'}; steps with no result {w['fresh_no_result']}"
        )
    print(f"load average before {report['loadavg_before']}, after {report['loadavg_after']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("--tasks", type=int, default=20, help="MiniWoB++ tasks (spread evenly)")
    parser.add_argument(
        "--task", action="append", default=[], help="this task (repeatable) instead of --tasks"
    )
    parser.add_argument("--tries", type=int, default=6, help="controls tried per task")
    parser.add_argument("--steps", type=int, default=8, help="timed env steps per side")
    parser.add_argument("--resets", type=int, default=3, help="fresh wrapped sessions")
    parser.add_argument("--repeats", type=int, default=20, help="timed requests per case")
    parser.add_argument("--only", nargs="*", default=list(SECTIONS))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--daemon-python", default=str(ROOT / ".venv" / "bin" / "python"))
    parser.add_argument(
        "--integrations-python", default=str(ROOT / ".venv-integrations" / "bin" / "python")
    )
    parser.add_argument("--wrapper-only", type=Path, help=argparse.SUPPRESS)  # the child's JSON
    parser.add_argument("--serve-daemon", type=Path, help=argparse.SUPPRESS)  # a watch daemon
    args = parser.parse_args()
    unknown = set(args.only) - set(SECTIONS)
    if unknown:
        raise SystemExit(
            f"--only: unknown section {sorted(unknown)[0]!r}; known: {', '.join(SECTIONS)}"
        )
    if args.serve_daemon:
        serve_daemon(args.serve_daemon, "watch")
        return
    if args.wrapper_only:  # the child, in the integrations venv
        with tempfile.TemporaryDirectory() as tmp_name:
            res = wrapper(
                miniwob_pages(sys.executable),
                args.steps,
                args.resets,
                args.daemon_python,
                Path(tmp_name),
            )
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
            tasks = args.task or pick_tasks(pages, args.tasks)
            unknown_tasks = [t for t in tasks if not (pages / f"{t}.html").is_file()]
            if unknown_tasks:
                raise SystemExit(f"--task: no MiniWoB++ task {unknown_tasks[0]!r} in {pages}")
            report["finals"] = finals(tasks, pages, args.tries)
        if "writes" in args.only:
            report["writes"] = writes()
        if "latency" in args.only:
            report["latency"] = latency(args.repeats, tmp)
        if "wrapper" in args.only:
            report["wrapper"] = wrapper_child(args, tmp / "wrapper.json")
    report["loadavg_after"] = os.getloadavg()
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
