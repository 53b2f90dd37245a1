"""The agent's side of the extension's page hook (extension/src/page-hook.ts): one request
from the agent's page with ``window.postMessage``, and the extension's reply, checked.

A script of the page's own origin overhears every request (its id and key) and can post a
reply of its own. The extension signs its replies with a reply key the page never sees (the
daemon gives it to the agent in ``hook.granted.reply_key``): :func:`verify_hook_reply` takes
only a reply whose ``mac`` checks out and whose ``request_digest`` names the very request the
agent sent (:func:`request_digest`: a page script that re-posts the agent's request with its
own candidates under the overheard id and key gets a signed reply, but one that names its own
request), and :func:`hook_request` waits past forgeries for it. ``page`` is anything with
Playwright's ``async evaluate(expression, arg)``.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import math
import re
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


def _js_number(x: float) -> str:
    """``x`` as JavaScript's ``Number.prototype.toString`` writes it (``JSON.stringify``)."""
    if not math.isfinite(x):
        raise ValueError(f"page hook: {x!r} has no JSON form")
    if x == 0:
        return "0"
    mantissa, _, exp = repr(abs(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0").rstrip("0")
    if whole.strip("0"):  # value = 0.<digits> * 10**point
        point = len(whole.lstrip("0")) + int(exp or 0)
    else:
        point = int(exp or 0) - (len(frac) - len(frac.lstrip("0")))
    sign, k = ("-" if x < 0 else ""), len(digits)
    if k <= point <= 21:
        return sign + digits + "0" * (point - k)
    if 0 < point <= 21:
        return f"{sign}{digits[:point]}.{digits[point:]}"
    if -6 < point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    e = point - 1
    return f"{sign}{digits[0]}{'.' + digits[1:] if k > 1 else ''}e{'+' if e >= 0 else '-'}{abs(e)}"


_SURROGATE = re.compile("[\ud800-\udfff]")


def canonical_json(value: Any) -> str:
    """``value`` as the extension's ``canonicalJson`` (extension/src/page-hook.ts) writes it:
    JSON with every object's keys sorted (by UTF-16 code units, as JavaScript sorts), no
    spaces, strings and numbers as ``JSON.stringify`` writes them."""
    if value is None or value is True or value is False:
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    if isinstance(value, Mapping):
        keys = sorted(value, key=lambda k: str(k).encode("utf-16-be", "surrogatepass"))
        return (
            "{"
            + ",".join(f"{canonical_json(str(k))}:{canonical_json(value[k])}" for k in keys)
            + "}"
        )
    if isinstance(value, list | tuple):
        return "[" + ",".join(canonical_json(v) for v in value) + "]"
    raise ValueError(f"page hook: {type(value).__name__} has no JSON form")


def request_digest(request: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the request's :func:`canonical_json` (all of it: channel, dir, id,
    type, key and body), as the extension names it in a signed reply's ``request_digest``."""
    return hashlib.sha256(canonical_json(request).encode()).hexdigest()


def verify_hook_reply(
    reply: Mapping[str, Any], reply_key: str, request: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The reply as the extension signed it (parsed from ``signed``), or None when its
    ``mac`` is missing or wrong, or it answers another request than ``request`` (the request
    as the agent posted it: its id, and its :func:`request_digest`)."""
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
    if body.get("id") != request.get("id"):
        return None
    digest = body.get("request_digest")
    if not isinstance(digest, str) or not hmac.compare_digest(digest, request_digest(request)):
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
    request = {**body, "type": type_, "key": key}
    sent = {**request, "channel": "webshepherd", "dir": "request", "id": rid}
    request_digest(sent)  # a body with no JSON form fails here, before it is sent
    await page.evaluate(_SEND, [rid, request])
    try:
        while (left := end - loop.time()) > 0:
            reply = await page.evaluate(_NEXT, [rid, left * 1000])
            if reply is None:
                break
            verified = verify_hook_reply(reply, reply_key, sent)
            if verified is not None:
                return verified
            log.warning(
                "dropped a page-hook reply to %s that the extension did not sign for this "
                "request (a page script's forgery?)",
                type_,
            )
    finally:
        await page.evaluate(_DONE, rid)
    raise WebShepherdError(
        f"page hook: no signed reply to {type_} within {timeout_s:g} s (is the extension "
        "loaded, its page hook on, and this page its tab's top frame?)",
        ErrorCode.TIMEOUT,
    )
