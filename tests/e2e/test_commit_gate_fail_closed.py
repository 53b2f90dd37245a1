"""A paused request whose gate loses its decider is refused, never let go (issue 49), with
Playwright's async API (the main venv's Playwright) in Debian's Chromium: the gate detached
while the request waits, and the daemon stopped while a paired person has not decided. Each
refusal is recorded with why; the recording server never sees the request
(tests/fixtures/write_pages). Pages opened by the page and downloads are held here too, on
this Playwright (tests/integrations/test_commit_gate_targets.py runs them on 1.44)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import async_playwright
from webshepherd.integrations.commit_gate import CommitGate
from webshepherd.integrations.playwright import hold_commits
from webshepherd.protocol.client.async_client import AsyncClient
from webshepherd.protocol.commits import request_digest
from webshepherd.protocol.common import DecisionInfo, HeldRequest
from webshepherd.protocol.replies import ApprovalRequest, CommitDecided

from tests.e2e.browser import CHROMIUM
from tests.fixtures.daemon import TEST_TOKEN, pairing_code
from tests.fixtures.poll import until
from tests.fixtures.write_pages import FETCH_POST, Expected, WriteServers

#: A fixed interval: proving that a refused request never arrives.
AFTER_S = 0.5


@pytest_asyncio.fixture(loop_scope="function")
async def chromium() -> AsyncIterator[Any]:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM)
        try:
            yield browser
        finally:
            await browser.close()


async def test_detaching_refuses_a_request_that_waits(chromium: Any) -> None:
    asked: list[HeldRequest] = []
    never = asyncio.Event()

    async def waits(request: HeldRequest) -> CommitDecided:
        asked.append(request)
        await never.wait()  # nobody answers
        raise AssertionError("never answered")

    with WriteServers() as servers:
        context = await chromium.new_context()
        gate = CommitGate(waits)
        await gate.attach(context, start_url=servers.home)
        page = await context.new_page()
        await gate.watch(page)
        await page.goto(servers.url(FETCH_POST))
        await FETCH_POST.act_async(page)

        async def paused() -> bool:
            return len(asked) == 1

        await until(paused, what="the POST paused")
        await gate.detach()

        async def failed() -> bool:
            return "failed" in await page.inner_text("#out")

        await until(failed, what="the page's fetch failed")
        await asyncio.sleep(AFTER_S)
        assert servers.count(FETCH_POST.held[0]) == 0, servers.received()
        (refused,) = gate.take_decisions()
        assert refused.decision.status == "rejected" and refused.decision.decider == "daemon"
        assert "the gate was detached" in (refused.decision.note or "")
        await context.close()


async def test_a_stopped_daemon_refuses_a_paused_request(start_daemon: Any, chromium: Any) -> None:
    with WriteServers() as servers:
        daemon = await start_daemon()
        person = AsyncClient(daemon.url, TEST_TOKEN, role="monitor", name="test-person")
        await person.connect()
        await person.pair(pairing_code(daemon.config.config_dir, "monitor"), "test-person")
        events = await person.subscribe().start()
        context = await chromium.new_context()
        agent = AsyncClient(daemon.url, TEST_TOKEN)
        await agent.connect()
        start = servers.url(FETCH_POST)
        session = await agent.start_session("order", start_url=start, holds="browser")
        gate = await hold_commits(context, session, start_url=start)
        page = await context.new_page()
        await gate.watch(page)
        await page.goto(start)
        await FETCH_POST.act_async(page)
        while not isinstance(await events.get(30), ApprovalRequest):
            pass  # the person sees the card, and does not decide
        events.close()
        await daemon.close_clients()
        await daemon.server.stop()  # the decider is gone

        async def refused() -> bool:
            return "failed" in await page.inner_text("#out")

        await until(refused, what="the page's fetch failed")
        await asyncio.sleep(AFTER_S)
        assert servers.count(FETCH_POST.held[0]) == 0, servers.received()
        (decided,) = gate.take_decisions()
        assert decided.decision.status == "rejected" and decided.decision.decider == "daemon"
        assert "asking about it failed" in (decided.decision.note or "")
        await gate.detach()
        await context.close()
        await person.close()
        await agent.close()


def approve(request: HeldRequest) -> CommitDecided:
    info = DecisionInfo(status="approved", by="test", decider="mode", mode="watch")
    return CommitDecided(
        session_id="s", request=request, request_digest=request_digest(request), decision=info
    )


def refuse(request: HeldRequest) -> CommitDecided:
    info = DecisionInfo(status="rejected", by="test", decider="mode", mode="stop")
    return CommitDecided(
        session_id="s", request=request, request_digest=request_digest(request), decision=info
    )


@pytest.mark.parametrize("status", ["rejected", "approved"])
async def test_a_popup_and_a_data_download_are_held(chromium: Any, status: str) -> None:
    asked: list[HeldRequest] = []

    async def decide(request: HeldRequest) -> CommitDecided:
        asked.append(request)
        return approve(request) if status == "approved" else refuse(request)

    popup_post = Expected("POST", "home", "/api/popup")
    with WriteServers() as servers:
        context = await chromium.new_context()
        gate = CommitGate(decide)
        await gate.attach(context, start_url=servers.home)
        page = await context.new_page()
        await gate.watch(page)
        await page.goto(f"{servers.home}/escape_window_open.html")
        await page.click("#go")

        async def popup_asked() -> bool:
            return any(r.url.endswith("/api/popup") for r in asked)

        await until(popup_asked, what="the popup's POST asked")
        await page.goto(f"{servers.home}/escape_data_download.html")
        await page.click("#go")

        async def download_asked() -> bool:
            return any(r.kind == "download" for r in asked)

        await until(download_asked, what="the data: download asked")
        await asyncio.sleep(AFTER_S)
        files = sorted(p.name for p in gate.downloads_dir.iterdir())
        if status == "approved":
            assert servers.count(popup_post) == 1 and files == ["order.txt"]
        else:
            assert servers.count(popup_post) == 0 and files == []
        await gate.detach()
        await context.close()


@pytest.mark.parametrize("status", ["rejected", "approved"])
async def test_a_websocket_message_is_held_like_a_request(chromium: Any, status: str) -> None:
    """Playwright 1.48+ (``route_web_socket``): the page's message reaches the server only
    when approved, once; refused, the page's socket closes (1008)."""
    from websockets.asyncio.server import ServerConnection, serve

    received: list[str] = []

    async def record(connection: ServerConnection) -> None:
        async for message in connection:
            received.append(str(message))
            await connection.send("ok")

    asked: list[HeldRequest] = []

    async def decide(request: HeldRequest) -> CommitDecided:
        asked.append(request)
        return approve(request) if status == "approved" else refuse(request)

    async with serve(record, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        with WriteServers() as servers:
            context = await chromium.new_context()
            gate = CommitGate(decide)
            await gate.attach(context, start_url=servers.home)
            page = await context.new_page()
            await page.goto(f"{servers.home}/escape_socket.html?ws=ws://127.0.0.1:{port}/")
            want = "answered ok" if status == "approved" else "closed 1008"

            async def settled() -> bool:
                return await page.inner_text("#out") == want

            await until(settled, what=f"the page's socket: {want}")
            await asyncio.sleep(AFTER_S)
            (held,) = asked
            assert (held.method, held.kind, held.fields[0].value) == (
                "WEBSOCKET",
                "write",
                "order=usb-c cable",
            )
            assert received == (["order=usb-c cable"] if status == "approved" else [])
            await gate.detach()
            await context.close()
