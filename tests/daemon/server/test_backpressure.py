"""Scheduler and fan-out under pressure: slow subscribers, disconnects, queue bounds, timeouts."""

from __future__ import annotations

import asyncio
import json
import socket
import threading

import pytest
from webshepherd.daemon.engine.engine import Engine
from websockets.client import ClientProtocol
from websockets.uri import parse_uri

from tests.fixtures.daemon import TEST_TOKEN, engine_like, start_session
from tests.fixtures.poll import until


class GatedEngine(Engine):
    """The real engine, held at the door of ``score`` until the test opens ``gate``."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.calls: list[str] = []
        self.cancelled: list[str] = []

    def score(self, step, on_progress=None, cancel=None):
        name = step.candidates[0].action
        self.calls.append(name)
        self.entered.set()
        while not self.gate.wait(0.01):
            if cancel is not None and cancel.is_set():
                self.cancelled.append(name)
                break
        return super().score(step, on_progress, cancel)


def cands(tag: str):
    return [{"thought": "t", "action": f"click('{tag}')"}]


async def send_score(client, rid: str, session_id: str, tag: str) -> None:
    """Send a score request for ``click('<tag>')`` (no approval), without waiting for the reply."""
    await client.send(
        {
            "type": "score",
            "id": rid,
            "session_id": session_id,
            "candidates": cands(tag),
            "approval": "never",
        }
    )


async def gated_daemon(start_daemon, daemon_engine, **overrides):
    engine = engine_like(GatedEngine, daemon_engine)
    daemon = await start_daemon(engine=engine, **overrides)
    return daemon, engine


async def test_disconnect_cancels_queued_and_running_work(start_daemon, daemon_engine):
    daemon, engine = await gated_daemon(start_daemon, daemon_engine)
    a, b = await daemon.client(), await daemon.client()
    sa, sb = await start_session(a), await start_session(b)
    await a.wait_for("checklist")
    await b.wait_for("checklist")
    await send_score(a, "ca", sa, "a")
    await until(engine.entered.is_set)
    await send_score(b, "cb", sb, "b")
    await until(lambda: daemon.server.scheduler.depth == 1)
    await b.close()
    await until(lambda: daemon.server.scheduler.depth == 0)  # b's queued job is gone
    await a.close()
    await until(lambda: engine.cancelled == ["click('a')"])  # a's running job saw its cancel Event
    engine.gate.set()
    await until(lambda: daemon.server.scheduler.in_flight == 0)
    assert engine.calls == ["click('a')"]  # b's job never reached the model
    c = await daemon.client()
    assert (await c.request({"type": "ping"}))["type"] == "pong"


async def test_overloaded_and_timeout(start_daemon, daemon_engine):
    daemon, engine = await gated_daemon(
        start_daemon, daemon_engine, queue_limit=1, request_timeout_s=1.5
    )
    a = await daemon.client()
    sid = await start_session(a)
    await a.wait_for("checklist")
    await send_score(a, "c1", sid, "1")
    await until(engine.entered.is_set)
    await send_score(a, "c2", sid, "2")
    await until(lambda: daemon.server.scheduler.depth == 1)
    over = await a.request(
        {"type": "score", "id": "c3", "session_id": sid, "candidates": cands("3")}
    )
    assert (over["type"], over["code"], over["retryable"]) == ("error", "overloaded", True)
    timed = await a.wait_for(lambda m: m.get("id") == "c1", timeout=30)
    assert (timed["type"], timed["code"], timed["retryable"]) == ("error", "timeout", True)
    engine.gate.set()
    second = await a.wait_for(lambda m: m.get("id") == "c2", timeout=30)
    assert second["type"] in ("scored", "error")
    assert (await a.request({"type": "ping"}))["type"] == "pong"


class StalledClient:
    """A real WebSocket client (websockets' sans-I/O protocol over a plain socket) that stops
    reading after it subscribes, with a tiny receive buffer, like a frozen monitor."""

    def __init__(self, port: int):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.settimeout(10)
        self.sock.connect(("127.0.0.1", port))
        self.proto = ClientProtocol(parse_uri(f"ws://127.0.0.1:{port}/v1"), max_size=None)
        self.proto.send_request(self.proto.connect())
        self._flush()
        while self.proto.handshake_exc is None and not self.proto.events_received():
            self.proto.receive_data(self.sock.recv(65536))
            if self.proto.state.name == "OPEN":
                break

    @classmethod
    def subscribed(cls, port: int, name: str) -> StalledClient:
        """Connected, authenticated as a monitor named ``name``, subscribed to everything."""
        c = cls(port)
        c.send(
            {
                "type": "hello",
                "id": "h",
                "protocol": 1,
                "token": TEST_TOKEN,
                "client": {"name": name, "role": "monitor"},
            }
        )
        c.send({"type": "subscribe", "id": "s", "sessions": "*"})
        return c

    def _flush(self) -> None:
        for chunk in self.proto.data_to_send():
            self.sock.sendall(chunk)

    def send(self, message: dict) -> None:
        self.proto.send_text(json.dumps(message).encode())
        self._flush()

    def read_until_closed(self) -> int | None:
        while self.proto.close_rcvd is None:
            data = self.sock.recv(1 << 20)
            if not data:
                break
            self.proto.receive_data(data)
        return self.proto.close_rcvd.code if self.proto.close_rcvd else None


async def test_slow_subscriber_is_closed_1013_and_others_are_unaffected(start_daemon):
    daemon = await start_daemon(send_queue_size=4, slow_consumer_s=0.3, stats_interval_s=60)
    slow = await asyncio.to_thread(StalledClient.subscribed, daemon.server.port, "frozen")
    fast = await daemon.client(role="monitor", name="fast")
    assert (await fast.request({"type": "subscribe", "sessions": "*"}))["type"] == "subscribed"
    agent = await daemon.client()
    sid = await start_session(agent)
    tree = "x" * (256 * 1024)
    n = 40

    async def read_fast() -> int:  # a subscriber that keeps up reads as events come
        got = 0
        while got < n:
            m = await fast.wait_for("observed", timeout=30)
            got += m["url"].startswith("u")
        return got

    reader = asyncio.get_running_loop().create_task(read_fast())
    for i in range(n):
        reply = await agent.request(
            {"type": "observe", "session_id": sid, "url": f"u{i}", "axtree": tree}
        )
        assert reply["type"] == "observed"
    assert await reader == n
    await until(
        lambda: all(c.client_name != "frozen" or c.closed for c in daemon.server.hub.conns.values())
    )
    assert await asyncio.to_thread(slow.read_until_closed) == 1013
    assert (await fast.request({"type": "ping"}))["type"] == "pong"
    assert (await agent.request({"type": "ping"}))["type"] == "pong"


async def test_a_cancelled_stop_of_a_connection_is_not_swallowed() -> None:
    """``Conn.stop`` reaps the writer it cancelled; a cancellation of stop's own caller (the
    daemon stopping, a timeout) propagates instead of being swallowed with the writer's."""
    from webshepherd.daemon.server.fanout import Conn
    from websockets.asyncio.client import connect
    from websockets.asyncio.server import ServerConnection, serve

    accepted: asyncio.Future[ServerConnection] = asyncio.get_running_loop().create_future()

    async def handler(ws: ServerConnection) -> None:
        accepted.set_result(ws)
        await ws.wait_closed()

    async with serve(handler, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}"):
            conn = Conn(1, await accepted, "agent", "test", queue_frames=8, slow_consumer_s=5)
            conn.start()
            await asyncio.sleep(0)  # the writer waits for frames
            stopping = asyncio.create_task(conn.stop())
            await asyncio.sleep(0)  # stop() waits for the writer it cancelled
            stopping.cancel()
            with pytest.raises(asyncio.CancelledError):
                await stopping
            assert stopping.cancelled()
            await until(lambda: conn._writer is not None and conn._writer.done())
