"""WebSockets of a gated context (:mod:`webshepherd.integrations.commit_gate`).

Playwright 1.48+ (``context.route_web_socket``): each message a page sends is held like a
request (method ``WEBSOCKET``, the message as its field); refused, the page's socket closes
with 1008 (:data:`SOCKET_REFUSED`) and nothing reaches the server.

Playwright 1.44 (BrowserGym's pin) has no such route, and Chromium's Fetch domain and request
blocking never see a WebSocket handshake. There the gate holds the handshake instead: a script
run in every frame before the page's own (:data:`HOLD_HANDSHAKES`) asks the gate about each
``new WebSocket(url)`` by a synchronous request to :data:`SOCKET_ASK`, which the gate's route
answers (it never leaves the browser). The handshake is a ``commit.check`` of its own (method
``WEBSOCKET``, field ``channel`` saying its messages are not held), decided like any write:
``ask`` with nobody to approve and ``stop`` refuse it (the page's constructor throws a
``SecurityError`` naming :data:`HANDSHAKE_REFUSED`, no connection is made), ``watch`` lets it
open and records it flagged. Once open, its messages leave unheld. The script lives in the
page's world: page script sees the wrapper (and could call the ask URL itself, which only asks),
a worker's WebSocket is not wrapped, and a page whose CSP ``connect-src`` refuses the ask has
its sockets refused in every mode (docs/security.md's limits). Once the gate detaches, the
script stays in the context (1.44 cannot remove it) and a route lets its handshakes connect.
"""

from __future__ import annotations

import asyncio
import json
from urllib.parse import parse_qs, urlsplit, urlunsplit

from webshepherd.daemon.browser.chromium import Steps, drive
from webshepherd.integrations.commit_gate_parts import (
    Holds,
    Request,
    Route,
    SocketRoute,
    _closed,
    _frame,
    _page_url,
)
from webshepherd.protocol.commits import url_origin
from webshepherd.protocol.common import HeldRequest, RequestField

__all__ = ["HANDSHAKE_REFUSED", "HOLD_HANDSHAKES", "SOCKET_ASK", "SOCKET_REFUSED", "SocketHolds"]

#: Why a page's WebSocket closed: a message it sent was refused (the close frame's reason).
SOCKET_REFUSED = "webshepherd: a message on this WebSocket was refused"
#: Why a page's ``new WebSocket(url)`` threw (Playwright < 1.48): its handshake was refused.
HANDSHAKE_REFUSED = "webshepherd: opening this WebSocket was refused"
#: Where the handshake script asks (a name that never resolves: only the gate's route answers).
SOCKET_ASK = "https://webshepherd.invalid/websocket?url="
#: The handshake's field on the card: what approving it lets through.
UNHELD_CHANNEL = "opens a channel whose messages are not held (Playwright < 1.48)"
_MAX_MESSAGE = 512
#: The answer to the handshake script's ask: readable from any page, never cached.
_ANSWER_HEADERS = {"access-control-allow-origin": "*", "cache-control": "no-store"}

#: Run in every frame before the page's scripts (Playwright < 1.48): ``new WebSocket(url)``
#: connects only once the gate's route answers 200 to its synchronous ask; else it throws.
HOLD_HANDSHAKES = (
    "(() => { const Native = globalThis.WebSocket; if (typeof Native !== 'function') return;"
    " const ask = " + json.dumps(SOCKET_ASK) + ", why = " + json.dumps(HANDSHAKE_REFUSED) + ";"
    " const allowed = (url) => { const x = new XMLHttpRequest();"
    " try { x.open('GET', ask + encodeURIComponent(url), false); x.send(); }"
    " catch (e) { return false; } return x.status === 200; };"
    " function WebSocket(url, protocols) { if (!new.target) throw new TypeError("
    "\"Failed to construct 'WebSocket': Please use the 'new' operator\");"
    " let target; try { target = new URL(url, location.href).href; }"
    " catch (e) { return Reflect.construct(Native, arguments, new.target); }"
    " if (!allowed(target)) throw new DOMException(why, 'SecurityError');"
    " return Reflect.construct(Native, arguments, new.target); }"
    " WebSocket.prototype = Native.prototype;"
    " for (const k of ['CONNECTING', 'OPEN', 'CLOSING', 'CLOSED'])"
    " Object.defineProperty(WebSocket, k, {value: Native[k], enumerable: true});"
    " Object.defineProperty(Native.prototype, 'constructor', {value: WebSocket,"
    " writable: true, configurable: true});"
    " Object.defineProperty(globalThis, 'WebSocket', {value: WebSocket, writable: false,"
    " configurable: false}); })();"
)


class SocketHolds(Holds):
    """A page's WebSocket messages held one by one (1.48+), or its handshake (1.44)."""

    _waiting: dict[Route, str]  # routes paused for an answer, how each fails

    # -- one WebSocket (Playwright 1.48+) ---------------------------------------------------

    def _on_socket(self, socket: SocketRoute) -> None:
        """A page's WebSocket, connected to its server: each message the page sends is held
        like a request (in order), the server's reach the page as they come."""
        server = socket.connect_to_server()
        if self._context is None:  # detached: the route stays (Playwright 1.48 cannot remove it)
            return
        if self._async:
            turn = asyncio.Lock()
            socket.on_message(lambda m: self._spawn(self._socket_sends(socket, server, m, turn)))
        else:
            socket.on_message(lambda m: drive(self._socket_sends(socket, server, m, None)))

    def _socket_sends(
        self,
        socket: SocketRoute,
        server: SocketRoute,
        message: str | bytes,
        turn: asyncio.Lock | None,
    ) -> Steps[None]:
        if turn is not None:
            yield turn.acquire()
        try:
            data = message.encode("utf-8") if isinstance(message, str) else bytes(message)
            shown = data[:_MAX_MESSAGE].decode("utf-8", "replace")
            request = HeldRequest(
                method="WEBSOCKET",
                url=socket.url[:8192],
                kind="write",
                origin=url_origin(socket.url),
                fields=[RequestField(name="message", value=shown)],
                body_bytes=len(data),
                trigger=self._trigger,
                element=self._element,
            )
            approved = yield from self._decided(request)
            if approved:
                server.send(message)
                return
            try:  # the page learns its message was refused: the channel closes
                yield socket.close(code=1008, reason=SOCKET_REFUSED)
                yield server.close(code=1000, reason=SOCKET_REFUSED)
            except Exception as exc:
                if not _closed(exc):
                    raise
        finally:
            if turn is not None:
                turn.release()

    # -- one handshake (Playwright < 1.48) --------------------------------------------------

    def _handshake(self, route: Route, request: Request) -> Steps[None]:
        """The handshake script's ask: answered 200 (connect) only when approved; refused,
        or failed as the gate detaches, the page's constructor throws."""
        target = _socket_url(parse_qs(urlsplit(request.url).query).get("url", [""])[0])
        held = HeldRequest(
            method="WEBSOCKET",
            url=target[:8192] or "about:blank",
            kind="write",
            origin=url_origin(target),
            fields=[RequestField(name="channel", value=UNHELD_CHANNEL)],
            page_url=_page_url(_frame(request)),
            trigger=self._trigger,
            element=self._element,
        )
        self._waiting[route] = "blockedbyclient"
        try:
            approved = yield from self._decided(held)
        finally:
            self._waiting.pop(route, None)
        try:
            yield route.fulfill(
                status=200 if approved else 403,
                headers=_ANSWER_HEADERS,
                body="",
            )
        except Exception as exc:
            if not _closed(exc):
                raise


def _socket_url(url: str) -> str:
    """The URL the socket connects to (``http(s)`` becomes ``ws(s)``, as the browser does)."""
    parts = urlsplit(url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme.lower(), parts.scheme.lower())
    return urlunsplit(parts._replace(scheme=scheme))


def _every(url: str) -> bool:
    return True


def _asks_socket(url: str) -> bool:
    return url.startswith(SOCKET_ASK)


def _open_unasked(route: Route) -> object:
    """After the gate detached (1.44 cannot remove its script): a handshake connects unasked."""
    return route.fulfill(status=200, headers=_ANSWER_HEADERS, body="")
