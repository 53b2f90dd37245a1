"""The client SDK against a real daemon (tiny real model) on loopback."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from webshepherd.protocol import Observation, Scored
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.client.sync import Client
from webshepherd.protocol.errors import (
    ConnectionLostError,
    ErrorCode,
    ProtocolError,
    SessionClosedError,
    UnauthorizedError,
    UnknownSessionError,
)
from webshepherd.protocol.token_store import TokenStore

from tests.fixtures.daemon import TEST_TOKEN, DaemonHandle, StartDaemon
from tests.fixtures.poll import until

pytestmark = pytest.mark.model

CHECKLIST = (
    "Checklist 1: Search for USB-C cables\n- Goal: results are shown\n"
    "Checklist 2: Open the cheapest"
)
AXTREE = "RootWebArea 'Shop', focused\n\t[12] searchbox 'Search products'\n\t[13] button 'Search'"
OBS = Observation(url="http://shop.test/", axtree=AXTREE)
CANDIDATES = [
    ("The search box is [12].", "fill('12', 'usb-c cable')"),
    ("Try deals.", "click('40')"),
]


def failed_reconnects(caplog: pytest.LogCaptureFixture) -> int:
    return sum(r.getMessage().startswith("reconnect to ") for r in caplog.records)


def client(daemon: DaemonHandle, **kw: Any) -> AsyncClient:
    kw.setdefault("token", TEST_TOKEN)
    return AsyncClient(daemon.url, **kw)


async def test_connect_with_the_stored_token(daemon: DaemonHandle, isolated_dirs: Path) -> None:
    TokenStore().write(TEST_TOKEN)  # where `webshepherd token` keeps it (WEBSHEPHERD_CONFIG_DIR)
    async with AsyncClient(daemon.url, name="sdk-test") as c:
        assert c.welcome is not None and c.welcome.protocol == 1
        assert c.welcome.daemon.backend == "transformers"
        assert await c.ping() < 5


async def test_no_stored_token_is_a_clear_error(daemon: DaemonHandle) -> None:
    with pytest.raises(UnauthorizedError, match=r"no pairing token found.*webshepherd token"):
        await AsyncClient(daemon.url).connect()


async def test_wrong_token_is_refused_and_not_retried(daemon: DaemonHandle) -> None:
    c = client(daemon, token="not-the-token")
    with pytest.raises(UnauthorizedError) as info:
        await c.connect()
    assert info.value.code is ErrorCode.UNAUTHORIZED
    assert "token" in info.value.message
    reader = c._reader
    await until(lambda: reader is None or reader.done(), what="the refused socket's reader to end")
    assert c._reconnector is None, "a refused hello must not start reconnecting"
    await c.close()


async def test_unreachable_daemon_says_how_to_start_it() -> None:
    c = AsyncClient("ws://127.0.0.1:9/v1", token="x", connect_timeout_s=3)
    with pytest.raises(ConnectionLostError, match="webshepherd serve") as info:
        await c.connect()
    assert info.value.retryable


async def test_full_session(daemon: DaemonHandle) -> None:
    progress: list[str] = []
    async with client(daemon) as c:
        session = await c.start_session(
            "Buy the cheapest USB-C cable",
            start_url=OBS.url,
            checklist=CHECKLIST,
            observation=OBS,
            agent="sdk-test",
        )
        checklist = await session.checklist(timeout=30)
        titles = [i.title for i in checklist.items]
        assert titles == ["Search for USB-C cables", "Open the cheapest"]
        assert checklist.source == "reference"
        observed = await session.observe(OBS.url, OBS.axtree)
        assert observed.step >= 0
        scored = await session.score(
            CANDIDATES, samples=1, approval="never", on_progress=lambda p: progress.append(p.delta)
        )
        assert isinstance(scored, Scored)
        assert [r.index for r in scored.results] == [0, 1]
        assert scored.decision.status == "auto"
        assert scored.step == observed.step  # scored against the observation just sent
        rewards = [r.reward for r in scored.results]
        if scored.best is not None:
            assert rewards[scored.best] == max(r for r in rewards if r is not None)
        for r in scored.results:
            assert r.reward is None or 0.0 <= r.reward <= 1.0
        recorded = await session.act("fill('12', 'usb-c cable')", "The search box is [12].")
        assert recorded.session_id == session.session_id
        ended = await session.end("success", "$4.99")
        assert (ended.outcome, ended.answer) == ("success", "$4.99")
        listed = await c.sessions()
        assert [s.session_id for s in listed] == [session.session_id]
        assert listed[0].state == "ended" and listed[0].steps >= 1
        history = await c.session(session.session_id)
        types = [e["type"] for e in history.events]
        assert types[0] == "session.started" and types[-1] == "session.ended"
        assert "scored" in types and "action" in types
    assert progress, "score.progress events reach the on_progress callback"


async def test_errors_are_typed_and_the_connection_survives(daemon: DaemonHandle) -> None:
    async with client(daemon) as c:
        with pytest.raises(UnknownSessionError) as info:
            await c.score("no-such-session", ["click('1')"])
        assert info.value.code is ErrorCode.UNKNOWN_SESSION
        session = await c.start_session("x", checklist=CHECKLIST, observation=OBS)
        await session.end()
        with pytest.raises(SessionClosedError):
            await session.observe(OBS.url, OBS.axtree)
        with pytest.raises(UnauthorizedError) as decided:  # an agent's connection may not
            await c.decide("no-such-request", "approve")
        assert decided.value.code is ErrorCode.UNAUTHORIZED
        assert await c.ping() < 5  # still connected


async def test_subscription_sees_another_clients_session(daemon: DaemonHandle) -> None:
    async with (
        client(
            daemon, role="monitor", name="mon", approver=await daemon.approver("monitor", "mon")
        ) as mon,
        client(daemon) as agent,
    ):
        sub = await mon.subscribe("*").start()
        session = await agent.start_session("Buy a cable", checklist=CHECKLIST, observation=OBS)
        await session.score(CANDIDATES, samples=1, approval="never")
        seen: list[str] = []
        while "scored" not in seen:
            event = await sub.get(timeout=30)
            if getattr(event, "session_id", session.session_id) == session.session_id:
                seen.append(event.type)
        # Events of this connection's own requests reach its subscription too.
    assert {"session.started", "checklist"} <= set(seen)


async def test_reconnects_after_the_daemon_restarts(
    start_daemon: StartDaemon, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="webshepherd.protocol.client.connection")
    first = await start_daemon(base=tmp_path)
    port = first.server.port
    c = client(first, backoff_initial_s=0.05, backoff_max_s=0.2, reconnect_wait_s=20)
    await c.connect()
    session = await c.start_session("Buy a cable", checklist=CHECKLIST, observation=OBS)
    sub = await c.subscribe("*").start()
    await first.server.stop()
    await until(lambda: not c.connected, what="the client to see the daemon gone")
    # A call made while disconnected waits for the reconnect (hello + re-subscribe), then runs.
    ping = asyncio.create_task(c.ping())
    await until(lambda: failed_reconnects(caplog) >= 2, what="two failed reconnects")
    assert not ping.done()
    second = await start_daemon(base=tmp_path, port=port)
    assert await asyncio.wait_for(ping, 20) < 5
    assert c.reconnects == 1 and c.connected
    # The recorded session survived the restart and is addressable again.
    await c.observe(session.session_id, OBS.url, OBS.axtree)
    async with client(second) as agent:
        s2 = await agent.start_session("Another task", checklist=CHECKLIST, observation=OBS)
        while True:  # the re-sent subscription delivers events of the new daemon
            event = await sub.get(timeout=20)
            if event.type == "session.started" and event.session_id == s2.session_id:
                break
    await c.close()


async def test_no_reconnect_when_disabled(start_daemon: StartDaemon, tmp_path: Path) -> None:
    d = await start_daemon(base=tmp_path)
    c = client(d, reconnect=False)
    await c.connect()
    await d.server.stop()
    await until(lambda: not c.connected, what="the client to see the daemon gone")
    with pytest.raises(ConnectionLostError):
        await c.ping()
    await c.close()


async def test_sync_client(daemon: DaemonHandle) -> None:
    def blocking() -> tuple[Scored, set[str]]:
        with Client(daemon.url, token=TEST_TOKEN, name="sync") as c:
            events = c.subscribe("*")
            session = c.start_session("Buy a cable", checklist=CHECKLIST, observation=OBS)
            assert session.checklist(timeout=30).items[0].index == 1
            scored = session.score(CANDIDATES, samples=1, approval="never")
            session.act("click('40')")
            session.end("failure")
            assert c.sessions()[0].session_id == session.session_id
            seen = {events.get(timeout=30).type for _ in range(5)}
        return scored, seen

    scored, seen = await asyncio.to_thread(blocking)  # the daemon runs on this test's loop
    assert len(scored.results) == 2
    # Events of this connection's own requests reach its subscription too.
    assert {"session.started", "observed", "checklist"} <= seen


async def test_a_monitor_edits_an_action_through_approval(daemon: DaemonHandle) -> None:
    async with (
        client(
            daemon, role="monitor", name="tui", approver=await daemon.approver("monitor", "tui")
        ) as mon,
        client(daemon) as agent,
    ):
        sub = await mon.subscribe("*").start()
        session = await agent.start_session("Buy a cable", checklist=CHECKLIST, observation=OBS)
        scoring = asyncio.create_task(session.score(CANDIDATES, samples=1, approval="always"))
        while True:
            event = await sub.get(timeout=60)
            if event.type == "approval.request":
                break
        assert event.session_id == session.session_id
        resolved = await mon.decide(event.request_id, "edit", action="click('41')", note="better")
        assert resolved.decision == "edit"
        scored = await asyncio.wait_for(scoring, 30)
        assert scored.decision.status == "edited"
        assert scored.decision.action == "click('41')"
        with pytest.raises(ProtocolError):  # the first decision wins
            await mon.decide(event.request_id, "approve")
