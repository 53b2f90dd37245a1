"""The browser demo's page side: the extension's page hook, pairing, and the overlay's state.

``hook`` sends one request with ``window.postMessage`` and waits for the extension's
reply (the same messages any agent uses; see extension/README.md). The overlay
helpers wait for the panel to show a step or an approval card and click its buttons,
exactly where a person would.
"""

from __future__ import annotations

import asyncio
from typing import Any

from webshepherd.protocol.errors import ErrorCode, WebShepherdError

_HOOK = """([type, body, timeout]) => new Promise((resolve, reject) => {
  const id = 'demo-' + Math.random().toString(36).slice(2);
  const timer = setTimeout(() => reject(new Error('no reply to ' + type)), timeout);
  addEventListener('message', function on(ev) {
    const d = ev.data;
    if (d && d.channel === 'webshepherd' && d.dir === 'reply' && d.id === id) {
      removeEventListener('message', on); clearTimeout(timer); resolve(d);
    }
  });
  postMessage({channel: 'webshepherd', dir: 'request', id, type, ...body}, '*');
})"""


class DemoBrowserError(WebShepherdError):
    """The browser demo could not start or the extension refused a request."""

    code = ErrorCode.INTERNAL


async def hook(page: Any, type_: str, timeout_s: float = 300.0, **body: Any) -> dict[str, Any]:
    """One page-hook request and its reply; an ``error`` reply raises ``DemoBrowserError``."""
    reply: dict[str, Any] = await page.evaluate(_HOOK, [type_, body, timeout_s * 1000])
    if reply.get("type") == "error":
        raise DemoBrowserError(f"the extension refused {type_}: {reply.get('message')}")
    return reply


async def pair(worker: Any, url: str, token: str, timeout_s: float = 20.0) -> None:
    """What a person does in the options page (daemon URL and token), then wait for ``on``."""
    await worker.evaluate(
        "(s) => chrome.storage.local.set(s)", {"url": url, "token": token, "flags": "default"}
    )
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    while (state := await worker.evaluate("() => self.webshepherd.state().conn")) != "connected":
        if loop.time() > end:
            raise DemoBrowserError(f"the extension did not connect to {url} (state {state!r})")
        await asyncio.sleep(0.1)


async def overlay_shows_step(page: Any, step: int, candidates: int, timeout_s: float = 30) -> None:
    """Wait until the panel lists ``candidates`` candidates of ``step``."""
    panel = page.get_by_test_id("ws-panel")
    await panel.get_by_text(f"Candidates · step {step}", exact=True).wait_for(
        timeout=timeout_s * 1000
    )
    cands = panel.get_by_test_id("ws-candidate")
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    while await cands.count() != candidates and loop.time() < end:
        await asyncio.sleep(0.05)


async def approval_card(page: Any, timeout_s: float = 60) -> Any:
    """The approval card, once it is shown (a locator)."""
    card = page.get_by_test_id("ws-approval")
    await card.wait_for(timeout=timeout_s * 1000)
    return card


async def click_decision(card: Any, decision: str) -> None:
    """Click the card's Approve or Reject button, as a person would."""
    await card.get_by_role("button", name=decision.capitalize()).click()
