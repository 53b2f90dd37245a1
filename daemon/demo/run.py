"""``webshepherd demo``: the whole loop offline, in one process, in under a minute.

1. Builds the tiny model if it is not cached (about a minute, once).
2. Starts the daemon in-process on an ephemeral loopback port, with a fresh
   token and a temporary data dir (deleted at exit unless ``--keep``): nothing
   of the user's is read or written, except the tiny model's cache.
3. Serves the bundled shop (``site/``) on loopback.
4. Runs the scripted agent through the shop with the SDK: every step it sends
   the real page's observation, scores one good and two bad candidates, runs
   the best-rewarded one in the text browser, and reports it.
5. Prints a reward curve in the terminal.

With ``--vision`` the tiny vision model judges with ``text+image``: each page is also drawn
as a small PNG (the text browser takes no pictures) and sent as the observation's screenshot.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from rich.console import Console
from rich.markup import escape
from webshepherd.daemon.demo.agent import Proposal, ShopAgent
from webshepherd.daemon.demo.browser import Browser
from webshepherd.daemon.demo.demo_setup import (
    demo_servers,
    load_demo_engine,
    print_commits_note,
    print_noise_note,
)
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.variants import ShopVariant, variant
from webshepherd.daemon.dev.screenshots import HEIGHT, WIDTH, axtree_png
from webshepherd.protocol.agents.environment import ActionError
from webshepherd.protocol.common import Screenshot
from webshepherd.protocol.steps import step_number
from webshepherd.protocol.terminal_text import terminal_safe

if TYPE_CHECKING:
    from webshepherd.daemon.engine.api import EngineAPI
    from webshepherd.protocol.replies import CandidateResult

MARKS = {"yes": "[green]✓[/]", "in_progress": "[yellow]~[/]", "no": "[red]✗[/]"}


def console_safe(text: object) -> str:
    """Untrusted text for a Rich console: every invisible, bidi and control character as a
    visible escape, a URL's non-ASCII host as punycode (protocol/terminal_text.py), then
    markup-escaped."""
    return escape(terminal_safe(str(text)))


@dataclass
class StepRecord:
    step: int  # the step's number as printed (protocol/steps.py: the wire index + 1)
    url: str
    proposals: list[Proposal]
    rewards: list[float | None]
    chosen: int  # the candidate executed
    best: int | None  # Web-Shepherd's pick (None when no reward parsed)
    items: dict[int, str] = field(default_factory=dict)
    daemon_step: int = 0  # the recording's step number (from 0)
    model_ms: float = 0.0
    latency_ms: float = 0.0
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The step as ``summary.json`` gives it (the browser demo's keys)."""
        return {
            "step": self.step,
            "daemon_step": self.daemon_step,
            "url": self.url,
            "candidates": [
                {"thought": p.thought, "action": p.action, "good": p.good} for p in self.proposals
            ],
            "rewards": self.rewards,
            "best": self.best,
            "chosen": self.chosen,
            "executed": self.proposals[self.chosen].action,
            "error": self.error,
            "checklist": {str(k): v for k, v in self.items.items()},
            "latency_ms": round(self.latency_ms, 1),
            "model_ms": round(self.model_ms, 1),
        }


def _bar(reward: float | None, width: int = 10) -> str:
    if reward is None:
        return "[dim]" + "—".ljust(width + 6) + "[/]"
    filled = round(reward * width)
    return f"{'█' * filled}{'░' * (width - filled)} {reward:.3f}"


def _items(result: CandidateResult) -> dict[int, str]:
    return {it.index: it.likeliest for it in result.items}


async def _drive(
    url: str,
    token: str,
    shop_url: str,
    samples: int,
    max_steps: int,
    seed: int,
    console: Console,
    policy: str = "scripted",
    vision: bool = False,
    shop: ShopVariant | None = None,
    shop_server: ShopServer | None = None,
    guards: bool = False,
) -> tuple[list[StepRecord], bool, str | None, str]:
    """Run the scripted agent through the shop, scoring each step; with ``shop_server`` (the
    shop in this process) the shop's labels of every scored candidate go to the recording
    too (``label``, source environment: ground truth for ``webshepherd export --format sft``)."""
    from webshepherd.daemon.demo.episodes import outcomes
    from webshepherd.daemon.demo.progress import Progress, measure
    from webshepherd.protocol import Observation
    from webshepherd.protocol.client import AsyncClient

    def shot(axtree: str) -> Screenshot | None:
        """With ``vision``: the page drawn as a small PNG (the text browser takes no pictures)."""
        if not vision:
            return None
        return Screenshot(mime="image/png", data=base64.b64encode(axtree_png(axtree)).decode())

    shop = shop if shop is not None else variant(0)
    browser = Browser()
    await asyncio.to_thread(browser.goto, shop_url)
    agent = ShopAgent(seed=seed, shop=shop)
    records: list[StepRecord] = []
    answer = None
    async with AsyncClient(url, token=token, name="demo-agent") as client:
        first = browser.observe()
        session = await client.start_session(
            shop.intent,
            start_url=first.url,
            checklist=shop.checklist,
            observation=Observation(
                url=first.url,
                axtree=first.axtree,
                screenshot=shot(first.axtree),
                elements=browser.elements(),
            ),
            agent="demo-agent",
        )
        checklist = await session.checklist(timeout=120)
        progress = Progress()
        if shop_server is not None:
            progress = measure(shop, shop_server.state, first.url, first.axtree, progress)
        titles = {it.index: it.title for it in checklist.items}
        console.print(f"session [bold]{session.session_id}[/], checklist ({checklist.source}):")
        for i, title in sorted(titles.items()):
            console.print(f"  {i}. {console_safe(title)}")
        console.print(
            "Per step: the candidates ([green]good[/]/[red]bad[/] as the script made them), "
            "their rewards, Web-Shepherd's pick ([bold yellow]★[/]), the one run "
            f"([bold cyan]→[/], policy [bold]{policy}[/]), and the model's verdict per "
            "checklist item for it ([green]✓[/] yes, [yellow]~[/] in progress, [red]✗[/] no, "
            "· not judged)."
        )
        for _ in range(max_steps):
            t_step = time.perf_counter()
            obs = browser.observe()
            if agent.done(obs.url):
                break
            if records:  # the start page is already step 1's (index 0's) observation
                await session.observe(obs.url, obs.axtree, shot(obs.axtree), browser.elements())
            proposals = agent.propose(obs.url, obs.axtree)
            scored = await session.score(
                [(p.thought, p.action) for p in proposals], samples=samples, approval="never"
            )
            if shop_server is not None:  # what the shop knows: each candidate tried on a copy
                acts = [p.action for p in proposals]
                after = await asyncio.to_thread(
                    outcomes, shop_server, browser, shop, progress, acts
                )
                for a in dict.fromkeys(acts):
                    await session.label(scored.step, a, after[a].labels(progress))
            rewards = [r.reward for r in sorted(scored.results, key=lambda r: r.index)]
            good = next(i for i, p in enumerate(proposals) if p.good)
            chosen = scored.best if policy == "reward" and scored.best is not None else good
            rec = StepRecord(
                step_number(scored.step),
                obs.url,
                proposals,
                rewards,
                chosen,
                scored.best,
                _items(scored.results[chosen]),
                daemon_step=scored.step,
                model_ms=scored.timing.model_ms,
            )
            records.append(rec)
            inputs = scored.results[0].judge_inputs if vision else None
            _print_step(console, rec, titles, scored.timing.model_ms, inputs)
            if guards and scored.decision.guard and scored.decision.action is None:
                rec.error = scored.decision.note
                console.print(f"  [red]refused by the guards:[/] {console_safe(rec.error or '')}")
                break  # the daemon refused the step that commits; nobody is here to decide
            action = proposals[chosen]
            try:
                await asyncio.to_thread(browser.act, action.action)
            except ActionError as exc:
                rec.error = str(exc)
                console.print(f"  [red]action failed:[/] {console_safe(str(exc))}")
            await session.act(action.action, action.thought)
            if shop_server is not None:
                progress = after[action.action]
            rec.latency_ms = (time.perf_counter() - t_step) * 1000
        done = agent.done(browser.url)
        if done:
            answer = browser.url.rsplit("/", 1)[-1]
        await session.end("success" if done else "failure", answer)
    return records, done, answer, session.session_id


def _print_step(
    console: Console,
    rec: StepRecord,
    titles: dict[int, str],
    model_ms: float,
    inputs: str | None = None,
) -> None:
    console.print(
        f"[bold]step {rec.step}[/]  {urlsplit(rec.url).path or '/'}"
        f"{'?' + urlsplit(rec.url).query if urlsplit(rec.url).query else ''}"
        f"  [dim](model {model_ms / 1000:.1f} s{', judged on ' + inputs if inputs else ''})[/]"
    )
    width = max(console.width, 80)
    for i, (p, r) in enumerate(zip(rec.proposals, rec.rewards, strict=True)):
        mark = "[bold cyan]→[/]" if i == rec.chosen else " "
        star = "[bold yellow]★[/]" if i == rec.best else " "
        verdict = "[green]good[/]" if p.good else "[red]bad [/]"
        room = max(16, width - 58)  # what is left after the action, verdict and reward
        thought = p.thought if len(p.thought) <= room else p.thought[: room - 1] + "…"
        console.print(
            f"  {mark}{star}{console_safe(f'{p.action:<28.28}')} {verdict}  {_bar(r)}  "
            f"[dim]{console_safe(thought)}[/]",
            highlight=False,
            soft_wrap=True,
        )
    if rec.best is None:
        how = "no reward parsed"
    elif rec.best == rec.chosen:
        how = "Web-Shepherd agrees"
    else:
        how = f"Web-Shepherd preferred {console_safe(rec.proposals[rec.best].action)}"
    marks = " ".join(f"{MARKS.get(rec.items.get(i, ''), '[dim]·[/]')}{i}" for i in sorted(titles))
    console.print(
        f"    chose {console_safe(rec.proposals[rec.chosen].action)} ({how});  checklist {marks}",
        highlight=False,
    )


def _plot(records: list[StepRecord]) -> str | None:
    try:
        import plotext as plt
    except ImportError:
        return None
    chosen = [(r.step, r.rewards[r.chosen]) for r in records if r.rewards[r.chosen] is not None]
    best = [(r.step, r.rewards[r.best]) for r in records if r.best is not None]
    good = [(s, x) for s, x in best if x is not None]
    if not chosen and not good:
        return None
    fig = plt.figure
    fig.clear()
    fig.plot_size(72, 16)
    fig.theme("colorless")
    if chosen:
        line = fig.signal([s for s, _ in chosen], [x for _, x in chosen], marker="dot")
        line.lines(True)
        fig.draw(line)
    if good:
        points = fig.signal([s for s, _ in good], [x for _, x in good], marker="x")
        fig.draw(points)
    fig.ruler("y").lim(0, 1)
    last = max(r.step for r in records)
    fig.ruler("x").lim(0.5, last + 0.5)
    # whole steps only (plotext would label evenly spaced fractions: 0.5, 1.7, 2.8, ...)
    steps = list(range(1, last + 1, max(1, -(-last // 12))))
    fig.ruler("x").ticks(steps, [str(s) for s in steps])
    fig.title("reward per step: • executed action, x best candidate")
    fig.label("step")
    return str(fig.build().string())


def run_demo(
    model: str | None = None,
    vision: bool = False,
    samples: int = 2,
    max_steps: int = 40,
    seed: int = 0,
    policy: str = "scripted",
    keep: bool = False,
    plot: bool = True,
    console: Console | None = None,
    shop_variant: int = 0,
    out: Path | None = None,
    guards: bool = False,
) -> int:
    """Run the demo; returns the process exit code (0 when the pipeline ran end to end).
    ``shop_variant``: the shop (0 the original; others drawn, see :mod:`.variants`); ``out``:
    a folder for ``summary.json``."""
    console = console or Console()
    t0 = time.monotonic()
    shop = variant(shop_variant)
    console.rule("[bold]webshepherd demo")
    console.print(f"task: [bold]{console_safe(shop.intent)}[/]")
    if shop_variant:
        console.print(
            f"shop variant {shop_variant}: {console_safe(shop.shop)}, a shop the judge never saw"
        )

    print_commits_note(console, guards)
    engine, tiny = load_demo_engine(model, console, vision=vision)
    if vision:
        console.print(
            "judge inputs: [bold]text+image[/] (each page also drawn as a "
            f"{WIDTH}x{HEIGHT} PNG screenshot in the judge prompt)"
        )
    workdir = Path(tempfile.mkdtemp(prefix="webshepherd-demo-"))
    try:
        records, done, answer, session_id = asyncio.run(
            _serve_and_drive(
                engine, workdir, samples, max_steps, seed, console, policy, vision, shop, guards
            )
        )
    finally:
        if keep:
            console.print(f"recording kept in {workdir / 'data'}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    console.rule()
    outcome = (
        f"[green]order {answer} placed in {len(records)} steps[/]"
        if done
        else f"[red]task not finished after {len(records)} steps (the step limit)[/]"
    )
    summary = build_summary(shop, records, done, answer, session_id, time.monotonic() - t0)
    if keep:
        summary["data_dir"] = str(workdir / "data")
    t = summary["totals"]
    console.print(
        f"{outcome}; Web-Shepherd ranked the scripted good action first in {t['agreed']} of "
        f"{t['steps']} steps and parsed a reward for {t['parsed']} of {t['candidates']} "
        f"candidates; {t['wall_s']} s in all."
    )
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", "utf-8")
        console.print(f"wrote {out / 'summary.json'}")
    if plot and records:
        chart = _plot(records)
        if chart:
            if not sys.stdout.isatty():
                chart = re.sub(r"\x1b\[[0-9;]*m", "", chart)
            print(chart)
    if tiny:
        print_noise_note(console, vision)
    return 0


def build_summary(
    shop: ShopVariant,
    records: list[StepRecord],
    done: bool,
    answer: str | None,
    session_id: str,
    wall_s: float,
) -> dict[str, Any]:
    """``summary.json``: the browser demo's keys (steps, approvals, outcome, totals)."""
    lat = [r.latency_ms for r in records]
    return {
        "task": shop.intent,
        "mode": "text",
        "variant": shop.number,
        "shop": shop.shop,
        "steps": [r.as_json() for r in records],
        "approvals": [],
        "outcome": {
            "status": "success" if done else "failure",
            "order": answer,
            "session_id": session_id,
        },
        "totals": {
            "steps": len(records),
            "approvals": 0,
            "agreed": sum(r.best is not None and r.proposals[r.best].good for r in records),
            "candidates": sum(len(r.rewards) for r in records),
            "parsed": sum(x is not None for r in records for x in r.rewards),
            "step_latency_ms": {
                "mean": round(statistics.fmean(lat), 1) if lat else None,
                "p50": round(statistics.median(lat), 1) if lat else None,
                "max": round(max(lat), 1) if lat else None,
            },
            "wall_s": round(wall_s, 1),
        },
    }


async def _serve_and_drive(
    engine: EngineAPI,
    workdir: Path,
    samples: int,
    max_steps: int,
    seed: int,
    console: Console,
    policy: str,
    vision: bool,
    shop: ShopVariant,
    guards: bool = False,
) -> tuple[list[StepRecord], bool, str | None, str]:
    async with demo_servers(engine, workdir, samples, shop=shop, hold_commits=guards) as (
        server,
        token,
        shop_server,
    ):
        console.print(
            f"daemon on {server.url} (temporary data dir {workdir}); shop on {shop_server.url}"
        )
        return await _drive(
            server.url,
            token,
            shop_server.url,
            samples,
            max_steps,
            seed,
            console,
            policy,
            vision,
            shop,
            shop_server,
            guards,
        )
