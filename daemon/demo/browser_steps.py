"""One step of the browser demo: the agent's candidates scored through the page hook, the
approval of a held candidate (shown in the overlay, decided in the extension's side panel),
the action run with the harness, and each step's record (what ``summary.json`` lists): beside
the judge's checklist verdicts for the action run, the shop's own labels for it (``shop``: what
the shop's state and the page it led to say, :mod:`.progress`), so a reader sees at once
where the judge and the shop differ."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from webshepherd.daemon.demo.agent import CHECKLIST, ShopAgent
from webshepherd.daemon.demo.browser_page import (
    DemoBrowserError,
    approval_card,
    decide_in_side_panel,
    hook,
    overlay_shows_step,
)
from webshepherd.daemon.demo.progress import Progress, measure
from webshepherd.daemon.demo.run import StepRecord, _print_step, console_safe
from webshepherd.protocol.steps import step_number

if TYPE_CHECKING:
    from playwright.async_api import Page, Worker
    from webshepherd.daemon.browser.playwright_env import PlaywrightEnvironment
    from webshepherd.daemon.demo.agent import Proposal
    from webshepherd.daemon.demo.shop import ShopServer
    from webshepherd.protocol.agents import PageState

__all__ = [
    "APPROVAL_STEP",
    "BrowserDemoOptions",
    "CommitRefused",
    "DemoRun",
    "held_candidate",
    "verdicts",
]

APPROVAL_STEP = 3  # the search results: wrong products are tempting there
#: Actions that may send a request that commits, and how long after one a paused request
#: shows in the overlay at the latest (the extension asks the daemon, the daemon answers).
_MAY_SEND = ("click(", "dblclick(", "press(", "keyboard_press(")
PAUSE_SEEN_WITHIN_S = 1.0


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
    keep: bool = False  # keep the temporary data dir (the recording), named in summary.json
    guards: bool = False  # commits wait for a person (off by default: the demo orders unattended)


_TITLES = {int(n): t for n, t in re.findall(r"^Checklist (\d+): (.+)$", CHECKLIST, re.MULTILINE)}


def verdicts(result: dict[str, Any]) -> dict[int, str]:
    """Each checklist item's likeliest label in one scored result."""
    out = {}
    for it in result.get("items") or []:
        probs = {k: it[k] for k in ("yes", "in_progress", "no")}
        out[it["index"]] = max(probs, key=lambda k: probs[k])
    return out


def held_candidate(agent_step: list[Proposal], rewards: list[float | None]) -> int:
    """The bad candidate with the lowest reward (no reward counts as 0)."""
    bad = [i for i, p in enumerate(agent_step) if not p.good]
    return min(bad, key=lambda i: (rewards[i] if rewards[i] is not None else 0.0, i))


class CommitRefused(Exception):
    """A request the extension paused was refused: the demo ends there, cleanly."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class DemoRun:
    """One drive through the shop: the page, the harness, and what happened."""

    def __init__(
        self,
        page: Page,
        env: PlaywrightEnvironment,
        console: Console,
        opts: BrowserDemoOptions,
        key: str,
        worker: Worker | None = None,
        reply_key: str | None = None,
        shop: ShopServer | None = None,
    ) -> None:
        self.page, self.env, self.console, self.opts = page, env, console, opts
        self.shop = shop  # the shop served: its labels for each action run (``shop``)
        self.progress: Progress | None = None
        self.key = key  # the page hook's key (the daemon gave it to the agent)
        self.reply_key = reply_key  # checks the extension's replies (never in the page)
        self.worker = worker  # the extension's service worker (its side panel's address)
        self.steps: list[dict[str, Any]] = []
        self.approvals: list[dict[str, Any]] = []
        self.records: list[StepRecord] = []

    async def shot(self, name: str) -> str | None:
        if self.opts.out is None:
            return None
        await self.page.screenshot(path=str(self.opts.out / name), type="png")
        return name

    def shop_labels(self, state: PageState) -> None:
        """The shop's progress on the page ``state`` shows; the last step's ``shop`` labels
        (the action run led here) once they are known."""
        if self.shop is None:
            return
        before = self.progress or Progress()
        self.progress = measure(self.shop.variant, self.shop.state, state.url, state.axtree, before)
        if self.steps and "shop" not in self.steps[-1]:
            labels = self.progress.labels(before)
            self.steps[-1]["shop"] = {str(i): v for i, v in enumerate(labels, start=1)}

    async def step(self, n: int, agent: ShopAgent) -> bool:
        """One step; False once the order is confirmed (nothing left to do)."""
        t0 = time.perf_counter()
        state = await self.env.observe()
        observe_ms = (time.perf_counter() - t0) * 1000
        self.shop_labels(state)
        if agent.done(state.url):
            return False
        proposals = agent.propose(state.url, state.axtree)
        cands = [{"thought": p.thought, "action": p.action} for p in proposals]
        t_score = time.perf_counter()
        scored = await hook(
            self.page,
            "score",
            candidates=cands,
            samples=self.opts.samples,
            approval="never",
            key=self.key,
            reply_key=self.reply_key,
        )
        score_ms = (time.perf_counter() - t_score) * 1000
        results = sorted(scored["results"], key=lambda r: r["index"])
        rewards = [r["reward"] for r in results]
        best, good = scored["best"], next(i for i, p in enumerate(proposals) if p.good)
        reward_led = self.opts.policy == "reward" and best is not None
        chosen = best if reward_led else good
        await overlay_shows_step(self.page, scored["step"], len(cands))
        shown = step_number(scored["step"])  # what the overlay says too (protocol/steps.py)
        shot = await self.shot(f"step-{shown:02d}.png")
        rec = StepRecord(
            shown, state.url, proposals, rewards, chosen, best, verdicts(results[chosen])
        )
        self.records.append(rec)
        _print_step(self.console, rec, _TITLES, scored["timing"]["model_ms"])
        action, thought, wait_ms = proposals[chosen].action, proposals[chosen].thought, 0.0
        if shown == self.opts.approval_step:
            t_wait = time.perf_counter()
            action, thought = await self.ask_approval(shown, proposals, rewards, action, thought)
            wait_ms = (time.perf_counter() - t_wait) * 1000
        t_exec = time.perf_counter()
        await hook(
            self.page,
            "action",
            action=action,
            thought=thought,
            key=self.key,
            reply_key=self.reply_key,
        )
        error, refused = None, None
        try:
            await self.execute(action)
        except CommitRefused as exc:  # the person (or the time) said no: the demo ends here
            error = refused = exc.message
        except Exception as exc:  # ActionError: reported, the agent goes on
            error = getattr(exc, "message", str(exc))
            self.console.print(f"  [red]action failed:[/] {console_safe(error)}")
        execute_ms = (time.perf_counter() - t_exec) * 1000
        self.steps.append(
            {
                "step": shown,
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
        if refused is not None:
            self.console.print(
                f"  [bold red]refused:[/] {console_safe(refused)}; the demo ends here"
            )
            return False
        return True

    async def execute(self, action: str) -> None:
        """Run ``action``; when the extension pauses a request it causes (``--guards``), wait
        for the decision: approved, the page it leads to loads; refused, ``CommitRefused``."""
        run = asyncio.ensure_future(self.env.execute(action))
        loop = asyncio.get_running_loop()
        # a request the action caused may be paused after the action itself returned (the
        # harness does not see a request the extension holds): look a little longer
        end = None if self.opts.guards and action.startswith(_MAY_SEND) else 0.0
        while True:
            # asked of the extension's worker: the page waits on its paused request
            paused = await self.paused_commits()
            if paused:
                break
            if run.done():
                if end is None:
                    end = loop.time() + PAUSE_SEEN_WITHIN_S
                if loop.time() >= end:
                    await run  # nothing paused: the action's own result
                    return
            await asyncio.wait({run}, timeout=0.05)
        heard = len(await self.recent_commits())
        # the page it leads to: once approved, the held request goes and the page navigates
        main = self.page.main_frame
        wait_s = self.opts.approval_timeout_s + 60
        navigated = asyncio.ensure_future(
            self.page.wait_for_event(
                "framenavigated", predicate=lambda f: f == main, timeout=wait_s * 1000
            )
        )
        request_id = paused[0]["id"]
        what = f"{paused[0]['method']} {paused[0]['url']}"
        if self.opts.headless:
            self.console.print(
                f"  [magenta]scripted decision:[/] approving {console_safe(what)} in the "
                "extension's side panel"
            )
            assert self.worker is not None  # paused_commits() found it
            await decide_in_side_panel(self.page.context, self.worker, request_id, "approve")
        else:
            self.console.print(
                f"  [bold magenta]Your turn:[/] the shop's request {console_safe(what)} waits "
                "unsent. In the extension's side panel or popup, [bold]Approve[/] sends it; "
                f"[bold]Reject[/] ends the demo here (within {self.opts.approval_timeout_s:.0f} "
                "s; then it is refused)."
            )
        decided = await self.commit_decided(heard)
        d = decided["decision"]
        ran = decided.get("flagged") or d["status"] in ("approved", "edited", "auto")
        by = d.get("by") or d.get("decider") or "the daemon"
        if not ran:
            for waiting in (run, navigated):
                waiting.cancel()
                with contextlib.suppress(BaseException):
                    await waiting
            raise CommitRefused(f"{what} was refused ({d['status']}) by {by}")
        self.console.print(f"  [magenta]decision:[/] {console_safe(what)} approved by {by}")
        with contextlib.suppress(Exception):  # its wait may have run out while it was held
            await asyncio.wait_for(run, self.env.timeout_ms / 1000 + 10)
        with contextlib.suppress(Exception):  # a request that does not navigate: none comes
            await asyncio.wait_for(navigated, self.env.navigation_timeout_ms / 1000)
        await self.page.wait_for_load_state("load")

    async def paused_commits(self) -> list[dict[str, str]]:
        """The requests the extension holds for a decision now: ``id``, ``method``, ``url``."""
        if self.worker is None:
            return []
        got: list[dict[str, str]] = await self.worker.evaluate(
            "() => self.webshepherd.pendingCommits()"
        )
        return got

    async def recent_commits(self) -> list[dict[str, Any]]:
        """The paused requests the extension heard decided, newest last."""
        if self.worker is None:
            return []
        got: list[dict[str, Any]] = await self.worker.evaluate(
            "() => self.webshepherd.recentCommits()"
        )
        return got

    async def commit_decided(self, heard: int) -> dict[str, Any]:
        """The decision on the request paused now: the first the extension hears after
        ``heard`` decisions (a person's, or the daemon's once ``approval_timeout_s`` ran out)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + self.opts.approval_timeout_s + 30
        while loop.time() < end:
            recent = await self.recent_commits()
            if len(recent) > heard:
                return recent[heard]
            await asyncio.sleep(0.1)
        raise DemoBrowserError("no decision came for the paused request")

    async def ask_approval(
        self, n: int, proposals: list[Proposal], rewards: list[float | None], good: str, why: str
    ) -> tuple[str, str]:
        """Hold the worst bad candidate for approval; returns the action to run (``good``,
        the step's own choice, when it is rejected)."""
        i = held_candidate(proposals, rewards)
        held = proposals[i]
        self.console.print(
            f"  [bold magenta]approval:[/] the agent is tempted by {console_safe(held.action)} "
            f"(reward {'—' if rewards[i] is None else f'{rewards[i]:.3f}'}); held for a human"
        )
        pending = asyncio.ensure_future(
            hook(
                self.page,
                "score",
                candidates=[{"thought": held.thought, "action": held.action}],
                samples=self.opts.samples,
                approval="always",
                timeout_s=self.opts.approval_timeout_s + 60,
                key=self.key,
                reply_key=self.reply_key,
            )
        )
        # a person may decide before the overlay has drawn the card, or before it is read
        shown = asyncio.ensure_future(approval_card(self.page))
        await asyncio.wait({shown, pending}, return_when=asyncio.FIRST_COMPLETED)
        card, heading = None, None
        if shown.done() and shown.exception() is None:
            card = shown.result()
            with contextlib.suppress(Exception):  # "Waiting for a person: step N …"
                heading = await card.locator("h3").first.inner_text(timeout=2000)
        else:
            shown.cancel()
        shot = await self.shot("approval.png")
        if self.opts.headless:
            self.console.print(
                "  [magenta]scripted decision:[/] clicking Reject in the extension's side panel"
            )
            request_id = await card.get_attribute("data-request-id") if card else None
            if self.worker is None or request_id is None:
                raise DemoBrowserError("the side panel's card cannot be found: no worker or id")
            await decide_in_side_panel(self.page.context, self.worker, request_id, "reject")
        else:
            self.console.print(
                "  [bold magenta]Your turn:[/] the webshepherd panel in the page shows the held "
                "action. Open the extension's popup (its toolbar icon) or its side panel. "
                "Click [bold]Approve[/] there to let the agent run it, [bold]Reject"
                f"[/] to stop it, or [bold]Edit[/] to change the action (within "
                f"{self.opts.approval_timeout_s:.0f} s; then it is rejected)."
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
                "overlay": heading,  # the overlay card's heading, as a person read it
                "executed": run if approved else good,
                "screenshot": shot,
            }
        )
        self.console.print(
            f"  [magenta]decision:[/] {decision['status']} by {decision.get('by') or 'nobody'}"
            f" → runs {console_safe(run if approved else good)}"
        )
        return (run, held.thought) if approved else (good, why)
