"""BrowserGym actions run by bid in a real page: :class:`PlaywrightEnvironment`.

``observe()`` is the extension's own capture (BrowserGym's AX-tree text; the capture
marks every element with its ``bid`` attribute) plus a PNG screenshot of the page;
``execute()`` parses the action string (:mod:`.actions`), finds the element by its
``bid`` (through same-origin iframes, whose letters prefix their elements' bids),
scrolls it into view and acts, with short timeouts; actions that navigate wait for
the new page to load. Anything that cannot run raises ``ActionError`` with the reason,
and the next observation carries it as ``last_action_error``. Pointer actions pass
through the extension's panel, so an element under it is still reached.

    async with extension_context(profile_dir, DEFAULT_DIST, "chromium") as (ctx, worker):
        await wait_extension_ready(worker)
        page = await ctx.new_page()
        await page.goto(url, wait_until="load")
        env = PlaywrightEnvironment(page, worker)
        state = await env.observe()  # PageState: url, axtree (bids marked), PNG screenshot
        await env.execute("click('12')")  # ActionError when it cannot run
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, TypedDict

from webshepherd.daemon.browser.chromium import CaptureError, capture
from webshepherd.protocol.actions import ParsedAction, parse_action
from webshepherd.protocol.agents.environment import ActionError, ActionResult, PageState
from webshepherd.protocol.common import ElementFacts

if TYPE_CHECKING:
    from playwright.async_api import Frame, FrameLocator, Locator, Page, Request, Worker

_BID = re.compile(r"[A-Za-z]*[0-9]*")
_TEXT_INPUTS = {
    "",
    "text",
    "search",
    "email",
    "url",
    "tel",
    "password",
    "number",
    "date",
    "datetime-local",
    "month",
    "week",
    "time",
}
_DESCRIBE = """e => ({tag: e.tagName.toLowerCase(),
  type: (e.getAttribute('type') || '').toLowerCase(),
  editable: e.isContentEditable, disabled: !!e.disabled,
  options: e.tagName === 'SELECT' ? Array.from(e.options, o => [o.value, o.label]) : null})"""
# The overlay (the extension's panel, drawn over the page) lets pointer actions through,
# so an element under it is clicked, not the panel.


class _Described(TypedDict):
    """What :data:`_DESCRIBE` says of an element."""

    tag: str
    type: str
    editable: bool
    disabled: bool
    options: list[tuple[str, str]] | None  # (value, label) of a <select>'s options


_OVERLAY_PASS_THROUGH = """(on) => { for (const host of document.querySelectorAll(
  '[data-webshepherd-overlay]')) host.style.pointerEvents = on ? 'none' : ''; }"""
_POINTER = {"click", "dblclick", "hover", "check", "uncheck"}
_SETTLE = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
_NAVIGATING = {"click", "dblclick", "press", "keyboard_press", "keyboard_type", "select_option"}


def frame_bids(bid: str) -> list[str]:
    """The bids of the iframes leading to ``bid``, outermost first (``'bA12'`` -> ``['b', 'bA']``).

    A frame's letters are one lower-case letter then upper-case ones; its elements'
    bids are the frame's bid followed by theirs.
    """
    if not bid or not _BID.fullmatch(bid):
        raise ActionError(f"{bid!r} is not a bid (bids look like '12' or 'a3')")
    frames, i = [], 0
    while i < len(bid) and not bid[i:].isdigit():
        i += 1
        while i < len(bid) and bid[i].isupper():
            i += 1
        frames.append(bid[:i])
    return frames


class PlaywrightEnvironment:
    """An ``Environment`` over one Playwright page of a context with the extension loaded.

    ``worker`` is the extension's service worker (``daemon.chromium.extension_context``).
    ``start_url`` (default: the page's URL at the first ``observe``) is where ``reset``
    returns; ``on_reset`` (sync or async, optional) returns the site to its start state.
    """

    def __init__(
        self,
        page: Page,
        worker: Worker,
        *,
        flags: str = "default",
        screenshot: bool = True,
        timeout_ms: float = 3000,
        navigation_timeout_ms: float = 15000,
        start_url: str | None = None,
        on_reset: Callable[[], object] | None = None,
    ) -> None:
        self.page = page
        self.start_url = start_url
        self.on_reset = on_reset
        self.worker = worker
        self.flags = flags
        self.screenshot = screenshot
        self.timeout_ms = timeout_ms
        self.navigation_timeout_ms = navigation_timeout_ms
        self._last_error: str | None = None
        self._requested = 0  # navigation requests of the main frame
        self._committed = 0  # navigations of the main frame
        self._failed: str | None = None
        page.on("request", self._on_request)
        page.on("requestfailed", self._on_request_failed)
        page.on("framenavigated", self._on_navigated)

    # -- events ----------------------------------------------------------
    def _main(self, request: Request) -> bool:
        return bool(request.is_navigation_request()) and request.frame == self.page.main_frame

    def _on_request(self, request: Request) -> None:
        if self._main(request):
            self._requested += 1

    def _on_request_failed(self, request: Request) -> None:
        if self._main(request):
            self._failed = f"{request.url}: {request.failure or 'failed'}"

    def _on_navigated(self, frame: Frame) -> None:
        if frame == self.page.main_frame:
            self._committed += 1

    # -- Environment -----------------------------------------------------
    async def reset(self) -> None:
        """Back to ``start_url`` (cookies and storage of the context cleared, the site's
        ``on_reset`` run first): the start state a tree search replays from."""
        if self.start_url is None:
            raise ActionError("reset: no start page (observe once, or pass start_url)")
        if self.on_reset is not None:
            done = self.on_reset()
            if asyncio.iscoroutine(done):
                await done
        await self.page.context.clear_cookies()
        self._last_error = None
        try:
            await self.page.goto(
                self.start_url, wait_until="load", timeout=self.navigation_timeout_ms
            )
            await self.page.evaluate(
                "() => { try { localStorage.clear(); sessionStorage.clear(); } catch (e) {} }"
            )
        except Exception as exc:
            raise ActionError(f"reset to {self.start_url} failed: {_first_line(exc)}") from None

    async def observe(self) -> PageState:
        """The page as the model sees it (the extension's capture) and a PNG screenshot."""
        url = self.page.url
        if self.start_url is None:
            self.start_url = url
        try:
            cap = await capture(self.worker, url, self.flags, exact=True)
        except CaptureError as exc:  # what happened, with the worker's message
            raise ActionError(exc.message) from None
        shot = await self.page.screenshot(type="png") if self.screenshot else None
        error, self._last_error = self._last_error, None
        facts = cap.get("elements") or None  # the guards read them (sessions/guards.py)
        return PageState(
            url=cap["url"],
            axtree=cap["axtree"],
            screenshot=shot,
            last_action_error=error,
            elements=None
            if facts is None
            else {bid: ElementFacts.model_validate(f) for bid, f in facts.items()},
        )

    async def execute(self, action: str) -> ActionResult:
        """Run one action string; raises ``ActionError`` (kept for the next observation)."""
        try:
            parsed = parse_action(action)
            return await self._run(parsed)
        except ActionError as exc:
            self._last_error = exc.message
            raise
        except Exception as exc:  # Playwright's errors: first line only, no call log
            why = _first_line(exc)
            if type(exc).__name__ == "TimeoutError":
                why = (
                    f"the element did not take the action within {self.timeout_ms:.0f} ms "
                    "(covered by another element, moving, or not accepting input)"
                )
            self._last_error = f"{action.strip()}: {why}"
            raise ActionError(self._last_error) from None

    # -- actions ---------------------------------------------------------
    async def _run(self, act: ParsedAction) -> ActionResult:
        a, page, t = act.args, self.page, self.timeout_ms
        if act.name == "send_msg_to_user":
            return ActionResult(act.text, message=a["text"])
        if act.name == "report_infeasible":
            return ActionResult(act.text, infeasible=a["reason"])
        if act.name == "noop":
            await page.wait_for_timeout(min(float(a["wait_ms"]), 10_000))
            return ActionResult(act.text)
        if act.name in ("goto", "go_back", "go_forward"):
            await self._navigate(act)
            return ActionResult(act.text)
        if act.name == "scroll":
            await page.mouse.wheel(a["delta_x"], a["delta_y"])
            await page.evaluate(_SETTLE)
            return ActionResult(act.text)
        requested, committed = self._requested, self._committed
        self._failed = None
        if act.name == "keyboard_press":
            await page.keyboard.press(a["key"])
        elif act.name == "keyboard_type":
            await page.keyboard.type(a["text"])
        else:
            await self._on_element(act, t)
        if act.name in _NAVIGATING:
            await self._settle(act, requested, committed)
        return ActionResult(act.text)

    async def _on_element(self, act: ParsedAction, t: float) -> None:
        a, bid = act.args, act.args["bid"]
        el = await self._locate(bid)
        info: _Described = await el.evaluate(_DESCRIBE)
        what = f"<{info['tag']}{' type=' + info['type'] if info['type'] else ''}>"
        if not await el.is_visible():
            raise ActionError(f"{act.name}: the element with bid {bid!r} ({what}) is not visible")
        if act.name in ("fill", "clear"):
            textual = (info["tag"] == "input" and info["type"] in _TEXT_INPUTS) or info[
                "tag"
            ] == "textarea"
            if not (textual or info["editable"]):
                raise ActionError(
                    f"{act.name}: cannot fill a {what} (bid {bid!r}); it takes text fields"
                )
        if act.name == "select_option":
            if info["options"] is None:
                raise ActionError(f"select_option: bid {bid!r} is a {what}, not a <select>")
            wanted = [a["options"]] if isinstance(a["options"], str) else list(a["options"])
            known = {x for pair in info["options"] for x in pair}
            missing = [w for w in wanted if w not in known]
            if missing:
                labels = ", ".join(repr(label) for _, label in info["options"])
                raise ActionError(
                    f"select_option: option {missing[0]!r} not found in <select> {bid!r} "
                    f"(options: {labels})"
                )
        if info["disabled"] and act.name not in ("hover", "focus"):
            raise ActionError(f"{act.name}: the element with bid {bid!r} ({what}) is disabled")
        if act.name in ("check", "uncheck") and info["type"] not in ("checkbox", "radio"):
            raise ActionError(f"{act.name}: bid {bid!r} is a {what}, not a checkbox or radio")
        await el.scroll_into_view_if_needed(timeout=t)
        if act.name not in _POINTER:
            return await self._act(el, act, info, t)
        await self.page.evaluate(_OVERLAY_PASS_THROUGH, True)
        try:
            await self._act(el, act, info, t)
        finally:
            with contextlib.suppress(Exception):  # a navigation replaced the document
                await self.page.evaluate(_OVERLAY_PASS_THROUGH, False)

    async def _act(self, el: Locator, act: ParsedAction, info: _Described, t: float) -> None:
        a = act.args
        if act.name in ("click", "dblclick"):
            click = el.click if act.name == "click" else el.dblclick
            await click(button=a["button"], modifiers=list(a["modifiers"]), timeout=t)
        elif act.name == "hover":
            await el.hover(timeout=t)
        elif act.name == "fill":
            await el.fill(a["value"], timeout=t)
        elif act.name == "clear":
            await el.clear(timeout=t)
        elif act.name == "focus":
            await el.focus(timeout=t)
        elif act.name in ("check", "uncheck"):
            await (el.check if act.name == "check" else el.uncheck)(timeout=t)
        elif act.name == "press":
            await el.press(a["key_comb"], timeout=t)
        elif act.name == "select_option":
            options = info["options"]
            assert options is not None  # _on_element checked it is a <select>
            wanted = [a["options"]] if isinstance(a["options"], str) else list(a["options"])
            values = [v for w in wanted for v, label in options if w in (v, label)][: len(wanted)]
            await el.select_option(values, timeout=t)
        else:  # pragma: no cover - SIGNATURES and this dispatch move together
            raise ActionError(f"{act.name}: not supported by the Playwright harness")

    async def _locate(self, bid: str) -> Locator:
        """The element with ``bid``, through the iframes its prefix names."""
        scope: Page | FrameLocator = self.page
        for frame in frame_bids(bid):
            host = scope.locator(f'[bid="{frame}"]')
            if await host.count() == 0:
                raise ActionError(f"no iframe with bid {frame!r} on the page (for bid {bid!r})")
            scope = host.first.content_frame
        el = scope.locator(f'[bid="{bid}"]')
        if await el.count() == 0:
            raise ActionError(
                f"no element with bid {bid!r} on the page (bids come from the latest observation)"
            )
        return el.first

    async def _navigate(self, act: ParsedAction) -> None:
        page, t = self.page, self.navigation_timeout_ms
        if act.name == "goto":
            committed = self._committed
            try:
                await page.goto(act.args["url"], wait_until="load", timeout=t)
            except Exception as exc:
                message = f"navigation to {act.args['url']!r} failed: {_first_line(exc)}"
                await self._error_page_settled(committed)
                raise ActionError(message) from None
            return
        go = page.go_back if act.name == "go_back" else page.go_forward
        before = page.url
        response = await go(wait_until="load", timeout=t)
        if response is None and page.url == before:
            where = "previous" if act.name == "go_back" else "next"
            raise ActionError(f"{act.name}: there is no {where} page in this tab's history")

    async def _error_page_settled(self, committed: int, wait_s: float = 2.0) -> None:
        """After a failed navigation: let Chromium commit and load its error page."""
        loop = asyncio.get_running_loop()
        end = loop.time() + wait_s
        while self._committed == committed and loop.time() < end:
            await asyncio.sleep(0.02)
        with contextlib.suppress(Exception):
            await self.page.wait_for_load_state("load", timeout=wait_s * 1000)

    async def _settle(self, act: ParsedAction, requested: int, committed: int) -> None:
        """After an action that may navigate: wait for the new page to load, if one was asked."""
        try:
            await self.page.evaluate(_SETTLE)
            await asyncio.sleep(0.05)
        except Exception:
            pass  # the old document went away: a navigation is under way
        if self._requested == requested:
            return
        loop = asyncio.get_running_loop()
        end = loop.time() + self.navigation_timeout_ms / 1000
        while self._committed == committed:
            if self._failed:
                raise ActionError(f"{act.text}: navigation failed ({self._failed})")
            if loop.time() > end:
                raise ActionError(f"{act.text}: the navigation it started did not complete")
            await asyncio.sleep(0.02)
        await self.page.wait_for_load_state("load", timeout=self.navigation_timeout_ms)


def _first_line(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return text.strip().splitlines()[0]
