"""What happens before a connection reaches the session machine (protocol.md, Security).

The HTTP checks run before the WebSocket opens (path, Origin allowlist, Host: else HTTP 404
or 403); then the first message must be ``hello`` with the protocol version and the token
within ``hello_timeout_s`` (else close code 1008). Before that, frames are limited to
:data:`PREAUTH_FRAME_BYTES` (else 1009); :func:`read_hello` raises the limit on success.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Collection
from http import HTTPStatus
from importlib import metadata

from webshepherd.protocol import requests as rq
from webshepherd.protocol.errors import ProtocolError, UnauthorizedError, WebShepherdError
from webshepherd.protocol.replies import Error
from webshepherd.protocol.token_store import tokens_equal
from webshepherd.protocol.union import dump, parse_client_message, request_id_of
from webshepherd.protocol.version import PROTOCOL_VERSION
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

log = logging.getLogger(__name__)
CLOSE_POLICY = 1008
# Until ``hello`` succeeds a frame may hold this much (a hello is a few hundred bytes); then
# the configured limit applies. An unauthenticated client cannot make the daemon buffer more.
PREAUTH_FRAME_BYTES = 16 * 1024


def allow_messages_up_to(ws: ServerConnection, n: int | None) -> None:
    """Raise the connection's message limit to ``n`` bytes (``None``: none). websockets 16
    split ``max_size`` into message and fragment limits; before it, the message limit is
    ``max_size``, and setting ``max_message_size`` there would silently change nothing."""
    protocol = ws.protocol
    setattr(
        protocol, "max_message_size" if hasattr(protocol, "max_message_size") else "max_size", n
    )


def daemon_version() -> str:
    try:
        return metadata.version("webshepherd")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def check_request(
    connection: ServerConnection,
    request: Request,
    path: str,
    allowed_origins: Collection[str],
    hosts: Collection[str],
) -> Response | None:
    """``None`` lets the WebSocket open; else the HTTP response that refuses it."""
    if request.path.split("?", 1)[0] != path:
        return connection.respond(HTTPStatus.NOT_FOUND, f"use {path}\n")
    origins = request.headers.get_all("Origin")
    origin = origins[0] if len(origins) == 1 else None
    if origins and (len(origins) > 1 or origin not in allowed_origins):
        log.warning("refused Origin %r", origin)
        return connection.respond(HTTPStatus.FORBIDDEN, "origin not allowed\n")
    host_headers = request.headers.get_all("Host")
    host = host_headers[0] if len(host_headers) == 1 else None
    if host not in hosts:
        log.warning("refused Host %r", host)
        return connection.respond(HTTPStatus.FORBIDDEN, "host not allowed\n")
    return None


async def refuse(ws: ServerConnection, rid: str | None, exc: WebShepherdError) -> None:
    """Answer with the error, then close with 1008."""
    with contextlib.suppress(ConnectionClosed):
        await ws.send(dump(Error(id=rid, code=exc.code, message=exc.message, retryable=False)))
        await ws.close(CLOSE_POLICY, exc.message[:120])


async def read_hello(
    ws: ServerConnection, timeout_s: float, token: str, max_frame_bytes: int
) -> rq.Hello | None:
    """The client's valid ``hello``, or ``None`` once the connection is refused or gone.

    On success the connection's frame limit becomes ``max_frame_bytes``. Any frame that is
    not a valid hello is answered with an error and a 1008 close, never a 1011."""
    try:
        raw = await asyncio.wait_for(ws.recv(), timeout_s)
    except TimeoutError:
        await ws.close(CLOSE_POLICY, f"no hello within {timeout_s:g} s")
        return None
    except ConnectionClosed:
        return None
    try:
        msg = parse_client_message(raw)
    except ProtocolError as exc:
        await refuse(ws, request_id_of(raw), exc)
        return None
    rid = msg.id
    if not isinstance(msg, rq.Hello):
        await refuse(ws, rid, UnauthorizedError("the first message must be hello (with the token)"))
        return None
    if msg.protocol != PROTOCOL_VERSION:
        await refuse(
            ws,
            rid,
            ProtocolError(
                f"protocol: this daemon speaks protocol version {PROTOCOL_VERSION}, "
                f"the client asked for {msg.protocol}"
            ),
        )
        return None
    if not tokens_equal(msg.token, token):
        await refuse(ws, rid, UnauthorizedError("wrong token (see `webshepherd token`)"))
        return None
    allow_messages_up_to(ws, max_frame_bytes)
    return msg
