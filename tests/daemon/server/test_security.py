"""Handshake and transport security against a real daemon; it keeps serving afterwards."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest
from webshepherd.daemon.config import check_bind
from webshepherd.daemon.server.handshake import allow_messages_up_to
from webshepherd.daemon.server.server import DaemonServer
from webshepherd.protocol.errors import WebShepherdError
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.typing import Origin

from tests.fixtures.daemon import EXTENSION_ID, TEST_TOKEN, DaemonHandle, make_config


async def still_serving(daemon: DaemonHandle) -> None:
    c = await daemon.client()
    assert (await c.request({"type": "ping"}))["type"] == "pong"


async def closed_code(ws) -> int | None:
    with pytest.raises(ConnectionClosed) as info:
        while True:
            await asyncio.wait_for(ws.recv(), 10)
    return info.value.rcvd.code if info.value.rcvd else None


async def test_no_hello_in_time_closes_1008(start_daemon):
    daemon = await start_daemon(hello_timeout_s=0.3)
    c = await daemon.raw()
    assert await closed_code(c.ws) == 1008
    await still_serving(daemon)


@pytest.mark.parametrize(
    ("first", "code", "text"),
    [
        (
            {"type": "hello", "id": "h", "protocol": 1, "token": "wrong", "client": {"name": "x"}},
            "unauthorized",
            "wrong token",
        ),
        ({"type": "ping", "id": "h"}, "unauthorized", "first message must be hello"),
        (
            {
                "type": "hello",
                "id": "h",
                "protocol": 2,
                "token": TEST_TOKEN,
                "client": {"name": "x"},
            },
            "invalid_message",
            "protocol version 1",
        ),
    ],
)
async def test_bad_hello_gets_an_error_then_1008(daemon, first, code, text):
    c = await daemon.raw()
    await c.send(first)
    err = await c.recv()
    assert (err["type"], err["id"], err["code"]) == ("error", "h", code)
    assert text in err["message"] and "Traceback" not in err["message"]
    assert await closed_code(c.ws) == 1008
    await still_serving(daemon)


async def test_hostile_origin_is_refused_with_403(daemon):
    with pytest.raises(InvalidStatus) as info:
        await connect(daemon.url, origin=Origin("https://evil.example"))
    assert info.value.response.status_code == 403
    with pytest.raises(InvalidStatus):
        await connect(
            daemon.url, origin=Origin("chrome-extension://someotherextensionidxxxxxxxxxx")
        )
    ok = await daemon.client(role="extension", origin=f"chrome-extension://{EXTENSION_ID}")
    assert (await ok.request({"type": "ping"}))["type"] == "pong"
    await still_serving(daemon)


async def http_status(port: int, host_lines: list[str], origin: str | None = None) -> int:
    """Send a raw WebSocket upgrade request with exactly these Host header lines."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = [
        "GET /v1 HTTP/1.1",
        *host_lines,
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
    ]
    if origin:
        head.append(f"Origin: {origin}")
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
    status = await asyncio.wait_for(reader.readline(), 10)
    writer.close()
    return int(status.split()[1])


async def test_foreign_host_is_refused_with_403(daemon):
    port = daemon.server.port
    assert await http_status(port, [f"Host: attacker.example:{port}"]) == 403  # DNS rebinding
    assert await http_status(port, ["Host: 127.0.0.1:1"]) == 403  # another port
    assert await http_status(port, [f"Host: 127.0.0.1:{port}", "Host: evil:1"]) == 403
    assert await http_status(port, []) == 403  # no Host at all
    for ok in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
        assert await http_status(port, [f"Host: {ok}"]) == 101
    assert (
        await http_status(port, [f"Host: localhost:{port}"], origin="http://localhost:3000") == 403
    )
    await still_serving(daemon)


async def test_wrong_path_is_404(daemon):
    with pytest.raises(InvalidStatus) as info:
        await connect(daemon.url.replace("/v1", "/v2"))
    assert info.value.response.status_code == 404


async def test_oversized_frame_closes_1009(start_daemon):
    daemon = await start_daemon(max_frame_bytes=64 * 1024)
    c = await daemon.client(max_size=None)
    big = json.dumps(
        {"type": "observe", "id": "o", "session_id": "s", "url": "u", "axtree": "x" * (100 * 1024)}
    )
    await c.send(big)
    assert await closed_code(c.ws) == 1009
    await still_serving(daemon)


def test_non_loopback_bind_is_refused_without_tls_or_insecure(tmp_path, daemon_engine):
    with pytest.raises(WebShepherdError, match="TLS certificate"):
        DaemonServer(make_config(tmp_path, host="0.0.0.0"), daemon_engine)
    check_bind(make_config(tmp_path, host="::1"))  # loopback is fine
    check_bind(make_config(tmp_path, host="0.0.0.0", insecure=True))  # explicit opt-out (logged)
    with pytest.raises(WebShepherdError, match="both a certificate and a key"):
        check_bind(make_config(tmp_path, host="0.0.0.0", tls_cert=tmp_path / "c.pem"))


async def test_insecure_non_loopback_bind_warns_loudly(start_daemon, caplog):
    daemon = await start_daemon(host="0.0.0.0", insecure=True)
    assert any("INSECURE" in r.message for r in caplog.records)
    await still_serving(daemon)  # over 127.0.0.1 (the Host check accepts loopback names)


def test_the_message_limit_is_raised_whatever_websockets_calls_it():
    """websockets 16 and later: ``max_message_size``; before: ``max_size`` (setting the new
    name there changed nothing, and every frame above 16 KiB was refused after hello).
    ``make test-websockets-compat`` runs the socket tests on websockets 15."""
    older, newer = SimpleNamespace(max_size=16), SimpleNamespace(max_message_size=16)
    for protocol in (older, newer):
        allow_messages_up_to(SimpleNamespace(protocol=protocol), 1 << 20)  # type: ignore[arg-type]
    assert older.max_size == newer.max_message_size == 1 << 20
    assert not hasattr(older, "max_message_size")
