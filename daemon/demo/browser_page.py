"""The browser demo's page side: the extension's page hook, pairing, the overlay's state,
and the extension's side panel where a person decides.

``hook`` sends one request with ``window.postMessage`` and waits for the extension's
reply (the same messages any agent uses, with the key the agent got from the daemon; see
extension/README.md). The overlay helpers wait for the panel to show a step or an approval
card; ``decide_in_side_panel`` clicks Approve or Reject in the extension's side panel page,
where a person decides (the overlay in the page has no decision controls).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webshepherd.protocol.client.page_hook import hook_request
from webshepherd.protocol.errors import ErrorCode, WebShepherdError
from webshepherd.protocol.steps import step_label

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Locator, Page, Worker

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


async def hook(
    page: Page, type_: str, timeout_s: float = 300.0, reply_key: str | None = None, **body: Any
) -> dict[str, Any]:
    """One page-hook request and its reply; an ``error`` reply raises ``DemoBrowserError``.
    With ``reply_key`` (``hook.granted.reply_key``) only a reply the extension signed counts
    (``protocol.client.page_hook``); a page script's forgery is dropped."""
    if reply_key is not None:
        reply = await hook_request(
            page, type_, key=body.pop("key"), reply_key=reply_key, timeout_s=timeout_s, **body
        )
    else:
        reply = await page.evaluate(_HOOK, [type_, body, timeout_s * 1000])
    if reply.get("type") == "error":
        raise DemoBrowserError(f"the extension refused {type_}: {reply.get('message')}")
    return reply


async def pair(worker: Worker, url: str, token: str, timeout_s: float = 20.0) -> None:
    """What the options page sets (daemon URL and token; the page hook on, as the agent's
    launcher), then wait for ``on``."""
    await worker.evaluate(
        "(s) => chrome.storage.local.set(s)",
        {"url": url, "token": token, "flags": "default", "pageHook": True},
    )
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    while (state := await worker.evaluate("() => self.webshepherd.state().conn")) != "connected":
        if loop.time() > end:
            raise DemoBrowserError(f"the extension did not connect to {url} (state {state!r})")
        await asyncio.sleep(0.1)


async def pair_person(
    ctx: BrowserContext, worker: Worker, config_dir: Path, timeout_s: float = 20.0
) -> None:
    """Pair the extension as a person does: a one-time code as ``webshepherd pair extension``
    makes it (in the daemon's config dir), entered in the extension's options page. Only then
    does its side panel decide approvals."""
    from webshepherd.daemon.server.approvers import Approvers

    code = Approvers(config_dir).create_code("extension").code
    ext_id = worker.url.split("/")[2]
    page = await ctx.new_page()
    try:
        await page.goto(f"chrome-extension://{ext_id}/options.html", wait_until="load")
        await page.get_by_label("Pairing code").fill(code)
        await page.get_by_role("button", name="Pair", exact=True).click()
        status = page.get_by_test_id("ws-pairing")
        await status.get_by_text("Paired as extension:").wait_for(timeout=timeout_s * 1000)
    finally:
        await page.close()


async def overlay_shows_step(page: Page, step: int, candidates: int, timeout_s: float = 30) -> None:
    """Wait until the panel lists ``candidates`` candidates of the wire's step index ``step``
    (shown as protocol/steps.py reads it)."""
    panel = page.get_by_test_id("ws-panel")
    await panel.get_by_text(f"Candidates · {step_label(step)}", exact=True).wait_for(
        timeout=timeout_s * 1000
    )
    cands = panel.get_by_test_id("ws-candidate")
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    while await cands.count() != candidates and loop.time() < end:
        await asyncio.sleep(0.05)


async def approval_card(page: Page, timeout_s: float = 60) -> Locator:
    """The approval card, once it is shown (a locator)."""
    card = page.get_by_test_id("ws-approval")
    await card.wait_for(timeout=timeout_s * 1000)
    return card


async def decide_in_side_panel(
    ctx: BrowserContext, worker: Worker, request_id: str, decision: str, timeout_s: float = 30
) -> None:
    """Open the extension's side panel page and click Approve or Reject on the request's
    card, as a person would; the panel page is closed afterwards."""
    ext_id = worker.url.split("/")[2]
    panel = await ctx.new_page()
    try:
        await panel.goto(f"chrome-extension://{ext_id}/panel.html", wait_until="load")
        card = panel.locator(f"[data-testid=ws-decide][data-request-id='{request_id}']")
        await card.wait_for(timeout=timeout_s * 1000)
        await card.get_by_role("button", name=decision.capitalize()).click()
        await card.wait_for(state="detached", timeout=timeout_s * 1000)
    finally:
        await panel.close()
