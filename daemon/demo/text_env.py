"""The demo's text browser as an agent :class:`~webshepherd.protocol.agents.Environment`.

Lets the reward-guided agent loop run end to end without Chromium: pages come from
:class:`~.browser.Browser` (real HTTP, AX-tree text), actions are BrowserGym strings.
``send_msg_to_user`` and ``report_infeasible`` end the episode; an action the text
browser cannot run raises :class:`~webshepherd.protocol.agents.ActionError` and is
reported as ``last_action_error`` on the next observation, as BrowserGym does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from webshepherd.daemon.demo import browser as text_browser
from webshepherd.protocol.actions import parse_action
from webshepherd.protocol.agents import ActionError, ActionResult, PageState


class TextEnvironment:
    """One text-browser tab opened at ``start_url``. ``on_reset``: called by :meth:`reset`
    to return the site to its start state (the demo empties the shop's cart and orders)."""

    def __init__(
        self,
        start_url: str,
        browser: text_browser.Browser | None = None,
        on_reset: Callable[[], None] | None = None,
    ) -> None:
        self.start_url = start_url
        self.browser = browser or text_browser.Browser()
        self.on_reset = on_reset
        self.last_error: str | None = None
        self._started = False

    async def reset(self) -> None:
        """The site back to its start (``on_reset``), a fresh tab at ``start_url``."""
        if self.on_reset is not None:
            await asyncio.to_thread(self.on_reset)
        self.browser = text_browser.Browser()
        self.last_error = None
        await asyncio.to_thread(self.browser.goto, self.start_url)
        self._started = True

    async def observe(self) -> PageState:
        if not self._started:
            await asyncio.to_thread(self.browser.goto, self.start_url)
            self._started = True
        obs = await asyncio.to_thread(self.browser.observe)
        elements = await asyncio.to_thread(self.browser.elements)
        return PageState(
            url=obs.url, axtree=obs.axtree, last_action_error=self.last_error, elements=elements
        )

    async def execute(self, action: str) -> ActionResult:
        try:
            result = await self._execute(action)
        except ActionError as exc:
            self.last_error = exc.message
            raise
        self.last_error = None
        return result

    async def _execute(self, action: str) -> ActionResult:
        try:
            parsed = parse_action(action)
            if parsed.name == "send_msg_to_user":
                return ActionResult(action, message=parsed.args["text"])
            if parsed.name == "report_infeasible":
                return ActionResult(action, infeasible=parsed.args["reason"])
            await asyncio.to_thread(self.browser.act, parsed)
        except ActionError as exc:
            raise ActionError(f"could not run {action!r}: {exc.message}") from None
        return ActionResult(action)
