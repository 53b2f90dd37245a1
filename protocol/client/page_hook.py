"""The agent's side of the extension's page hook (extension/src/page-hook.ts): one request
from the agent's page with ``window.postMessage``, and the extension's reply, checked.

A script of the page's own origin overhears every request (its id and key) and can post a
reply of its own. The extension signs its replies with a reply key the page never sees (the
daemon gives it to the agent in ``hook.granted.reply_key``): :func:`verify_hook_reply` takes
only a reply whose ``mac`` checks out, and :func:`hook_request` waits past forgeries for it.
``page`` is anything with Playwright's ``async evaluate(expression, arg)``.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import Mapping
from typing import Any

from webshepherd.protocol.errors import ErrorCode, WebShepherdError

log = logging.getLogger(__name__)

# Every reply with the request's id is queued in the page (a page script may delete the queue:
# that only withholds replies, it cannot make one pass the check).
_SEND = """([id, request]) => {
  const all = (window.__webshepherdHookReplies ||= {});
  const q = (all[id] = {replies: [], wake: null});
  q.on = (ev) => {
    const d = ev.data;
    if (d && d.channel === 'webshepherd' && d.dir === 'reply' && d.id === id) {
      q.replies.push(d);
      if (q.wake) q.wake();
    }
  };
  addEventListener('message', q.on);
  postMessage({...request, channel: 'webshepherd', dir: 'request', id}, '*');
}"""
_NEXT = """([id, timeout]) => new Promise((resolve) => {
  const q = (window.__webshepherdHookReplies || {})[id];
  if (!q) return resolve(null);
  if (q.replies.length) return resolve(q.replies.shift());
  const timer = setTimeout(() => { q.wake = null; resolve(null); }, timeout);
  q.wake = () => { q.wake = null; clearTimeout(timer); resolve(q.replies.shift()); };
})"""
_DONE = """(id) => {
  const all = window.__webshepherdHookReplies || {};
  if (all[id]) { removeEventListener('message', all[id].on); delete all[id]; }
}"""


def verify_hook_reply(reply: Mapping[str, Any], reply_key: str) -> dict[str, Any] | None:
    """The reply as the extension signed it (parsed from ``signed``), or None when its
    ``mac`` is missing or wrong, or it answers another request."""
    signed, mac = reply.get("signed"), reply.get("mac")
    if not isinstance(signed, str) or not isinstance(mac, str):
        return None
    want = hmac.new(reply_key.encode(), signed.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(mac.encode(), want.encode()):
        return None
    try:
        body = json.loads(signed)
    except ValueError:
        return None
    if not isinstance(body, dict) or body.get("id") != reply.get("id"):
        return None
    return body


async def hook_request(
    page: Any,
    type_: str,
    *,
    key: str,
    reply_key: str,
    timeout_s: float = 300.0,
    **body: Any,
) -> dict[str, Any]:
    """Send one page-hook request from ``page`` and return the extension's signed reply;
    a reply that fails the check (a page's forgery) is dropped with a warning, and the wait
    goes on. Raises ``WebShepherdError`` (``timeout``) when no signed reply comes in time."""
    rid = f"ws-{secrets.token_hex(8)}"
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    await page.evaluate(_SEND, [rid, {**body, "type": type_, "key": key}])
    try:
        while (left := end - loop.time()) > 0:
            reply = await page.evaluate(_NEXT, [rid, left * 1000])
            if reply is None:
                break
            verified = verify_hook_reply(reply, reply_key)
            if verified is not None:
                return verified
            log.warning(
                "dropped a page-hook reply to %s that the extension did not sign (a page "
                "script's forgery?)",
                type_,
            )
    finally:
        await page.evaluate(_DONE, rid)
    raise WebShepherdError(
        f"page hook: no signed reply to {type_} within {timeout_s:g} s (is the extension "
        "loaded, its page hook on, and this page its tab's top frame?)",
        ErrorCode.TIMEOUT,
    )
