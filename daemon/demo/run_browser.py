"""``webshepherd demo --browser``: the whole product in Chromium, in one process.

1. The tiny model (built if not cached) and the daemon in-process on an ephemeral
   loopback port with a fresh token and a temporary data dir.
2. The bundled shop on loopback; Chromium (the system binary) with the built
   extension loaded and paired with the daemon, as a person would in its options.
3. A session started through the page hook, so the overlay follows it; every step
   the scripted agent (:class:`~.agent.ShopAgent`) proposes one good and two bad
   candidates, scores them through the hook (the overlay shows the rewards and the
   checklist) and runs the script's good action (``--policy reward``: the best-rewarded
   one) by bid with the Playwright harness.
4. On one step the agent is tempted by its worst-rewarded bad candidate and asks
   for approval (``approval: always``): the overlay shows the card; a person decides
   (headed), or the demo clicks *Reject* in the overlay (headless). A rejected action
   is replaced by the step's own choice.
5. Headless (or with ``--out``) it writes a screenshot per step, one of the approval
   card, and ``summary.json`` to the output folder.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from .agent import CHECKLIST, TASK, ShopAgent
from .browser_page import (
    DemoBrowserError,
    approval_card,
    click_decision,
    hook,
    overlay_shows_step,
    pair,
)
from .demo_engine import load_demo_engine, print_noise_note
from .run import StepRecord, _print_step
from .shop import ShopServer

APPROVAL_STEP = 3  # the search results: wrong products are tempting there


@dataclass(frozen=True)
class BrowserDemoOptions:
    """What ``webshepherd demo --browser`` was asked for."""

    headless: bool = False
    out: Path | None = None  # screenshots and summary.json
    samples: int = 2
    max_steps: int = 12
    seed: int = 0
    policy: str = "scripted"  # run the script's good action, or "reward": the best-rewarded
    approval_step: int = APPROVAL_STEP  # the step whose worst bad candidate is held
    approval_timeout_s: float = 300.0  # a person's time to decide (headed)


_TITLES = {int(n): t for n, t in re.findall(r"^Checklist (\d+): (.+)$", CHECKLIST, re.MULTILINE)}


def _verdicts(result: dict[str, Any]) -> dict[int, str]:
    out = {}
    for it in result.get("items") or []:
        probs = {k: it[k] for k in ("yes", "in_progress", "no")}
        out[it["index"]] = max(probs, key=lambda k: probs[k])
    return out


def _held_candidate(agent_step: list[Any], rewards: list[float | None]) -> int:
    """The bad candidate with the lowest reward (no reward counts as 0)."""
    bad = [i for i, p in enumerate(agent_step) if not p.good]
    return min(bad, key=lambda i: (rewards[i] if rewards[i] is not None else 0.0, i))


def check_requirements(headless: bool) -> tuple[str, Path]:
    """Chromium, the built extension, Playwright and (headed) a display; else a clear error."""
    from webshepherd.daemon.chromium import DEFAULT_DIST

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise DemoBrowserError(
            "Chromium is not installed (Debian/Ubuntu: apt-get install chromium)"
        )
    if not (DEFAULT_DIST / "manifest.json").exists():
        raise DemoBrowserError(
            f"the extension is not built ({DEFAULT_DIST} is missing): run `make extension` "
            "(or: cd extension && npm ci && npm run build)"
        )
    try:
        import playwright  # noqa: F401
    except ImportError:
        raise DemoBrowserError(
            "the playwright package is missing: pip install -e '.[dev]'"
        ) from None
    if (
        not headless
        and sys.platform.startswith("linux")
        and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    ):
        raise DemoBrowserError(
            "no display for a headed browser (DISPLAY is not set): add --headless "
            "(screenshots and summary.json in --out DIR), or run under a virtual display: "
            "xvfb-run webshepherd demo --browser"
        )
    return chromium, DEFAULT_DIST


class _Run:
    """One drive through the shop: the page, the harness, and what happened."""

    def __init__(self, page: Any, env: Any, console: Console, opts: BrowserDemoOptions) -> None:
        self.page, self.env, self.console, self.opts = page, env, console, opts
        self.out, self.headless, self.samples = opts.out, opts.headless, opts.samples
        self.approval_step, self.approval_timeout_s = opts.approval_step, opts.approval_timeout_s
        self.steps: list[dict[str, Any]] = []
        self.approvals: list[dict[str, Any]] = []
        self.records: list[StepRecord] = []

    async def shot(self, name: str) -> str | None:
        if self.out is None:
            return None
        await self.page.screenshot(path=str(self.out / name), type="png")
        return name

    async def step(self, n: int, agent: ShopAgent) -> bool:
        """One step; False once the order is confirmed (nothing left to do)."""
        t0 = time.perf_counter()
        state = await self.env.observe()
        observe_ms = (time.perf_counter() - t0) * 1000
        if agent.done(state.url):
            return False
        proposals = agent.propose(state.url, state.axtree)
        cands = [{"thought": p.thought, "action": p.action} for p in proposals]
        t_score = time.perf_counter()
        scored = await hook(
            self.page, "score", candidates=cands, samples=self.samples, approval="never"
        )
        score_ms = (time.perf_counter() - t_score) * 1000
        results = sorted(scored["results"], key=lambda r: r["index"])
        rewards = [r["reward"] for r in results]
        best, good = scored["best"], next(i for i, p in enumerate(proposals) if p.good)
        reward_led = self.opts.policy == "reward" and best is not None
        chosen = best if reward_led else good
        await overlay_shows_step(self.page, scored["step"], len(cands))
        shot = await self.shot(f"step-{n:02d}.png")
        rec = StepRecord(n, state.url, proposals, rewards, chosen, best, _verdicts(results[chosen]))
        self.records.append(rec)
        _print_step(self.console, rec, _TITLES, scored["timing"]["model_ms"])
        action, thought, wait_ms = proposals[chosen].action, proposals[chosen].thought, 0.0
        if n == self.approval_step:
            t_wait = time.perf_counter()
            action, thought = await self.ask_approval(n, proposals, rewards, action, thought)
            wait_ms = (time.perf_counter() - t_wait) * 1000
        t_exec = time.perf_counter()
        await hook(self.page, "action", action=action, thought=thought)
        error = None
        try:
            await self.env.execute(action)
        except Exception as exc:  # ActionError: reported, the agent goes on
            error = getattr(exc, "message", str(exc))
            self.console.print(f"  [red]action failed:[/] {escape(error)}")
        execute_ms = (time.perf_counter() - t_exec) * 1000
        self.steps.append(
            {
                "step": n,
                "daemon_step": scored["step"],  # the recording's step number (from 0)
                "url": state.url,
                "candidates": [
                    {**c, "good": p.good} for c, p in zip(cands, proposals, strict=True)
                ],
                "rewards": rewards,
                "best": best,
                "chosen": chosen,
                "executed": action,
                "error": error,
                "checklist": {str(k): v for k, v in rec.items.items()},
                # the agent's step: observe + score + execute (no screenshot, no approval wait)
                "latency_ms": round(observe_ms + score_ms + execute_ms, 1),
                "observe_ms": round(observe_ms, 1),
                "score_ms": round(score_ms, 1),
                "model_ms": round(scored["timing"]["model_ms"], 1),
                "execute_ms": round(execute_ms, 1),
                "approval_wait_ms": round(wait_ms, 1),
                "screenshot": shot,
            }
        )
        return True

    async def ask_approval(
        self, n: int, proposals: list[Any], rewards: list[float | None], good: str, why: str
    ) -> tuple[str, str]:
        """Hold the worst bad candidate for approval; returns the action to run (``good``,
        the step's own choice, when it is rejected)."""
        i = _held_candidate(proposals, rewards)
        held = proposals[i]
        self.console.print(
            f"  [bold magenta]approval:[/] the agent is tempted by {escape(held.action)} "
            f"(reward {'—' if rewards[i] is None else f'{rewards[i]:.3f}'}); held for a human"
        )
        pending = asyncio.ensure_future(
            hook(
                self.page,
                "score",
                candidates=[{"thought": held.thought, "action": held.action}],
                samples=self.samples,
                approval="always",
                timeout_s=self.approval_timeout_s + 60,
            )
        )
        card = await approval_card(self.page)
        shot = await self.shot("approval.png")
        if self.headless:
            self.console.print("  [magenta]scripted decision:[/] clicking Reject in the overlay")
            await click_decision(card, "reject")
        else:
            self.console.print(
                "  [bold magenta]Your turn:[/] in the browser window the webshepherd panel shows "
                "an approval card. Click [bold]Approve[/] to let the agent run it, [bold]Reject"
                f"[/] to stop it, or [bold]Edit[/] to change the action (within "
                f"{self.approval_timeout_s:.0f} s; then it is rejected)."
            )
        scored = await pending
        decision = scored["decision"]
        approved = decision["status"] in ("approved", "edited")
        run = decision.get("action") or held.action
        self.approvals.append(
            {
                "step": n,
                "action": held.action,
                "reward": scored["results"][0]["reward"],
                "decision": decision["status"],
                "by": decision.get("by"),
                "executed": run if approved else good,
                "screenshot": shot,
            }
        )
        self.console.print(
            f"  [magenta]decision:[/] {decision['status']} by {decision.get('by') or 'nobody'}"
            f" → runs {escape(run if approved else good)}"
        )
        return (run, held.thought) if approved else (good, why)


async def _drive(
    server_url: str,
    token: str,
    shop_url: str,
    chromium: str,
    dist: Path,
    workdir: Path,
    console: Console,
    opts: BrowserDemoOptions,
) -> tuple[_Run, dict[str, Any]]:
    from webshepherd.daemon.chromium import extension_context, wait_extension_ready
    from webshepherd.daemon.harness.playwright_env import PlaywrightEnvironment

    async with extension_context(workdir / "profile", dist, chromium, headless=opts.headless) as (
        ctx,
        worker,
    ):
        await wait_extension_ready(worker)
        await pair(worker, server_url, token)
        page = ctx.pages[0] if ctx.pages else await ctx.new_page()
        await page.goto(shop_url, wait_until="load")
        started = await hook(
            page,
            "session.start",
            intent=TASK,
            checklist=CHECKLIST,
            start_url=shop_url,
            agent="demo-agent",
        )
        console.print(f"session [bold]{started['session_id']}[/] started through the page hook")
        env = PlaywrightEnvironment(page, worker, screenshot=False)
        run = _Run(page, env, console, opts)
        agent = ShopAgent(seed=opts.seed)
        for n in range(1, opts.max_steps + 1):
            if not await run.step(n, agent):
                break
        done = agent.done(page.url)
        answer = page.url.rstrip("/").rsplit("/", 1)[-1] if done else None
        final = await run.shot("final.png")
        await hook(page, "session.end", outcome="success" if done else "failure", answer=answer)
        outcome = {
            "status": "success" if done else "failure",
            "order": answer,
            "url": page.url,
            "heading": await _heading(page),
            "screenshot": final,
            "session_id": started["session_id"],
        }
        return run, outcome


async def _heading(page: Any) -> str | None:
    """The page's first heading (None when it has none)."""
    h1 = page.locator("h1")
    return await h1.first.inner_text() if await h1.count() else None


def _summary(run: _Run, outcome: dict[str, Any], headless: bool, wall_s: float) -> dict[str, Any]:
    lat = [s["latency_ms"] for s in run.steps]
    return {
        "task": TASK,
        "mode": "headless" if headless else "headed",
        "steps": run.steps,
        "approvals": run.approvals,
        "outcome": outcome,
        "totals": {
            "steps": len(run.steps),
            "approvals": len(run.approvals),
            "agreed": sum(
                s["best"] is not None and s["candidates"][s["best"]]["good"] for s in run.steps
            ),
            "step_latency_ms": {
                "mean": round(statistics.fmean(lat), 1) if lat else None,
                "p50": round(statistics.median(lat), 1) if lat else None,
                "max": max(lat) if lat else None,
            },
            "wall_s": round(wall_s, 1),
        },
    }


def run_browser_demo(
    opts: BrowserDemoOptions, model: str | None = None, console: Console | None = None
) -> int:
    """Run the browser demo; 0 when the order was placed (headless writes to ``opts.out``)."""
    console = console or Console()
    t0 = time.monotonic()
    console.rule("[bold]webshepherd demo --browser")
    try:
        chromium, dist = check_requirements(opts.headless)
    except DemoBrowserError as exc:
        console.print(f"[red]error:[/] {escape(exc.message)}")
        return 2
    if opts.headless and opts.out is None:
        opts = replace(opts, out=Path("webshepherd-demo"))
    if opts.out is not None:
        opts.out.mkdir(parents=True, exist_ok=True)
    console.print(f"task: [bold]{TASK}[/]")
    engine, tiny = load_demo_engine(model, opts.samples, console)
    workdir = Path(tempfile.mkdtemp(prefix="webshepherd-demo-"))
    try:
        run, outcome = asyncio.run(_serve_and_drive(engine, workdir, console, opts, chromium, dist))
    except DemoBrowserError as exc:
        console.print(f"[red]error:[/] {escape(exc.message)}")
        return 1
    except Exception as exc:  # Playwright's: most often the window was closed
        if type(exc).__module__.startswith("playwright"):
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            console.print(f"[red]the browser stopped before the demo finished:[/] {escape(first)}")
            return 1
        raise
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        engine.close()
    summary = _summary(run, outcome, opts.headless, time.monotonic() - t0)
    console.rule()
    _print_totals(console, summary, opts.out)
    if opts.out is not None:
        (opts.out / "summary.json").write_text(
            json.dumps(summary, indent=2) + "\n", encoding="utf-8"
        )
    if tiny:
        print_noise_note(console)
    return 0 if outcome["status"] == "success" else 1


def _print_totals(console: Console, summary: dict[str, Any], out: Path | None) -> None:
    t, o = summary["totals"], summary["outcome"]
    status = (
        f"[green]order {o['order']} placed in {t['steps']} steps[/]"
        if o["status"] == "success"
        else f"[red]task not finished after {t['steps']} steps[/]"
    )
    decided = ", ".join(f"{a['action']} {a['decision']}" for a in summary["approvals"])
    lat = t["step_latency_ms"]
    console.print(
        f"{status}; approvals: {escape(decided) or 'none'}; Web-Shepherd ranked the good action "
        f"first in {t['agreed']} of {t['steps']} steps; step latency p50 {lat['p50']} ms, "
        f"max {lat['max']} ms (approval wait excluded); {t['wall_s']} s in all."
    )
    if out is not None:
        shots = [s["screenshot"] for s in summary["steps"]] + [
            a["screenshot"] for a in summary["approvals"]
        ]
        console.print(
            f"wrote {out}/summary.json and {len([s for s in shots if s]) + 1} screenshots"
        )


async def _serve_and_drive(
    engine: Any,
    workdir: Path,
    console: Console,
    opts: BrowserDemoOptions,
    chromium: str,
    dist: Path,
) -> tuple[_Run, dict[str, Any]]:
    from webshepherd.daemon.config import DaemonConfig
    from webshepherd.daemon.extension_id import EXTENSION_ID
    from webshepherd.daemon.server import DaemonServer

    token = secrets.token_urlsafe(24)
    config = DaemonConfig(
        host="127.0.0.1",
        port=0,
        data_dir=workdir / "data",
        config_dir=workdir / "config",
        token=token,
        allowed_extension_ids=(EXTENSION_ID,),
        approval_threshold=None,
        approval_drop=None,
        approval_timeout_s=opts.approval_timeout_s,
        default_samples=opts.samples,
    )
    server = DaemonServer(config, engine)
    await server.start()
    shop = ShopServer().start()
    console.print(
        f"daemon on {server.url} (temporary data dir); shop on {shop.url}; "
        f"Chromium {'headless' if opts.headless else 'headed'} with the extension"
    )
    try:
        return await _drive(server.url, token, shop.url, chromium, dist, workdir, console, opts)
    finally:
        shop.stop()
        await server.stop()
