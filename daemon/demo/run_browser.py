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
   for approval (``approval: always``): the overlay shows the card; a person decides in
   the extension's popup or side panel (headed), or the demo clicks *Reject* in the side
   panel's page (headless). A rejected action is replaced by the step's own choice.
5. Headless (or with ``--out``) it writes a screenshot per step, one of the approval
   card, and ``summary.json`` to the output folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Coroutine
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from webshepherd.daemon.demo.agent import CHECKLIST, TASK, ShopAgent
from webshepherd.daemon.demo.browser_page import DemoBrowserError, hook, pair, pair_person
from webshepherd.daemon.demo.browser_report import build_summary, print_totals, write_summary
from webshepherd.daemon.demo.browser_steps import APPROVAL_STEP, BrowserDemoOptions, DemoRun
from webshepherd.daemon.demo.demo_setup import (
    demo_servers,
    load_demo_engine,
    print_commits_note,
    print_noise_note,
)
from webshepherd.daemon.demo.run import console_safe

if TYPE_CHECKING:
    from playwright.async_api import Page
    from webshepherd.daemon.demo.shop import ShopServer
    from webshepherd.daemon.engine.api import EngineAPI


def check_requirements(headless: bool) -> tuple[str, Path]:
    """Chromium, the built extension, Playwright and (headed) a display; else a clear error."""
    from webshepherd.daemon.browser.chromium import DEFAULT_DIST

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


async def _drive(
    server_url: str,
    token: str,
    shop: ShopServer,
    chromium: str,
    dist: Path,
    workdir: Path,
    console: Console,
    opts: BrowserDemoOptions,
    config_dir: Path,
) -> tuple[DemoRun, dict[str, Any]]:
    from webshepherd.daemon.browser.chromium import extension_context, wait_extension_ready
    from webshepherd.daemon.browser.playwright_env import PlaywrightEnvironment
    from webshepherd.protocol.client import AsyncClient

    async with extension_context(workdir / "profile", dist, chromium, headless=opts.headless) as (
        ctx,
        worker,
    ):
        await wait_extension_ready(worker)
        await pair(worker, server_url, token)
        # the demo stands in for the person who decides in the side panel: it pairs it
        await pair_person(ctx, worker, config_dir)
        page = ctx.pages[0] if ctx.pages else await ctx.new_page()
        await page.goto(shop.url, wait_until="load")
        async with AsyncClient(server_url, token=token, name="demo-agent") as agent_conn:
            grant = await agent_conn.hook_grant()  # the agent's own connection: the hook's key
        key, reply_key = grant.key, grant.reply_key
        started = await hook(
            page,
            "session.start",
            intent=TASK,
            checklist=CHECKLIST,
            start_url=shop.url,
            agent="demo-agent",
            key=key,
            reply_key=reply_key,
        )
        console.print(f"session [bold]{started['session_id']}[/] started through the page hook")
        env = PlaywrightEnvironment(page, worker, screenshot=False)
        run = DemoRun(page, env, console, opts, key, worker, reply_key, shop)
        agent = ShopAgent(seed=opts.seed)
        for n in range(1, opts.max_steps + 1):
            if not await run.step(n, agent):
                break
        else:
            run.shop_labels(await env.observe())  # the last action's labels
        done = agent.done(page.url)
        answer = page.url.rstrip("/").rsplit("/", 1)[-1] if done else None
        final = await run.shot("final.png")
        await hook(
            page,
            "session.end",
            outcome="success" if done else "failure",
            answer=answer,
            key=key,
            reply_key=reply_key,
        )
        outcome = {
            "status": "success" if done else "failure",
            "order": answer,
            "url": page.url,
            "heading": await _heading(page),
            "screenshot": final,
            "session_id": started["session_id"],
        }
        return run, outcome


async def _heading(page: Page) -> str | None:
    """The page's first heading (None when it has none)."""
    h1 = page.locator("h1")
    return await h1.first.inner_text() if await h1.count() else None


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
        console.print(f"[red]error:[/] {console_safe(exc.message)}")
        return 2
    if opts.headless and opts.out is None:
        opts = replace(opts, out=Path("webshepherd-demo"))
    if opts.out is not None:
        opts.out.mkdir(parents=True, exist_ok=True)
    console.print(f"task: [bold]{TASK}[/]")
    print_commits_note(console, opts.guards, DECIDER[opts.headless])
    console.print(
        f"step {APPROVAL_STEP} holds a tempting wrong candidate for a person"
        + (" (the demo rejects it itself, headless)" if opts.headless else "")
        + "; Ctrl-C stops the demo at any time"
    )
    engine, tiny = load_demo_engine(model, console)
    workdir = Path(tempfile.mkdtemp(prefix="webshepherd-demo-"))
    interrupted = threading.Event()
    try:
        run, outcome = asyncio.run(
            _until_interrupted(
                _serve_and_drive(engine, workdir, console, opts, chromium, dist),
                interrupted,
                workdir if not opts.keep else None,
            )
        )
    except BaseException as exc:
        if interrupted.is_set() or isinstance(exc, KeyboardInterrupt):
            console.print("[yellow]stopped (Ctrl-C)[/]: nothing more was sent")
            return 130
        if isinstance(exc, DemoBrowserError):
            console.print(f"[red]error:[/] {console_safe(exc.message)}")
            return 1
        if isinstance(exc, Exception) and type(exc).__module__.startswith("playwright"):
            # most often the window was closed
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            stopped = "[red]the browser stopped before the demo finished:[/]"
            console.print(f"{stopped} {console_safe(first)}")
            return 1
        raise
    finally:
        if not opts.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        engine.close()
    summary = build_summary(run, outcome, opts.headless, time.monotonic() - t0)
    if opts.keep:
        summary["data_dir"] = str(workdir / "data")
        console.print(f"the recording is kept in {console_safe(str(workdir / 'data'))}")
    console.rule()
    print_totals(console, summary, opts.out)
    if opts.out is not None:
        write_summary(opts.out, summary)
    if tiny:
        print_noise_note(console)
    return 0 if outcome["status"] == "success" else 1


#: Who decides a paused request in the browser demo, headed or headless (``--guards``).
DECIDER = {
    False: "you approve or reject it in the extension's side panel or popup (this Chromium's "
    "extension is paired as you)",
    True: "the demo itself approves it in the extension's side panel (headless: no person)",
}

#: How long the cleanup after Ctrl-C may take before the process exits anyway (seconds).
STOP_WITHIN_S = 0.5


async def _until_interrupted(
    main: Coroutine[Any, Any, tuple[DemoRun, dict[str, Any]]],
    interrupted: threading.Event,
    workdir: Path | None,
) -> tuple[DemoRun, dict[str, Any]]:
    """Run ``main``; on SIGINT cancel it (whatever it waits for: a model, a person, the
    browser) and exit within ``STOP_WITHIN_S`` even if the cleanup is slower (the browser's
    close): the temporary ``workdir`` goes first."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(main)

    def hard_exit() -> None:
        if workdir is not None:  # removed by a process of its own: a profile takes a while
            with contextlib.suppress(OSError):
                subprocess.Popen(
                    ["rm", "-rf", "--", str(workdir)],
                    start_new_session=True,  # out of reach of the Ctrl-C that stops us
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
        sys.stdout.write("stopped (Ctrl-C)\n")
        sys.stdout.flush()
        os._exit(130)

    def on_sigint(_signum: int, _frame: object) -> None:
        # a Python-level handler runs at once, even while the loop waits in select()
        if interrupted.is_set():
            return
        interrupted.set()
        timer = threading.Timer(STOP_WITHIN_S, hard_exit)
        timer.daemon = True  # a cleanup done in time exits as it is
        timer.start()
        loop.call_soon_threadsafe(task.cancel)

    if threading.current_thread() is not threading.main_thread():
        return await task  # signals reach the main thread only
    before = signal.signal(signal.SIGINT, on_sigint)
    try:
        return await task
    finally:
        signal.signal(signal.SIGINT, before)


async def _serve_and_drive(
    engine: EngineAPI,
    workdir: Path,
    console: Console,
    opts: BrowserDemoOptions,
    chromium: str,
    dist: Path,
) -> tuple[DemoRun, dict[str, Any]]:
    from webshepherd.daemon.extension_id import EXTENSION_ID

    async with demo_servers(
        engine,
        workdir,
        opts.samples,
        allowed_extension_ids=(EXTENSION_ID,),
        approval_timeout_s=opts.approval_timeout_s,
        hold_commits=opts.guards,
    ) as (server, token, shop):
        console.print(
            f"daemon on {server.url} (temporary data dir); shop on {shop.url}; "
            f"Chromium {'headless' if opts.headless else 'headed'} with the extension"
        )
        return await _drive(
            server.url,
            token,
            shop,
            chromium,
            dist,
            workdir,
            console,
            opts,
            server.config.config_dir,
        )
