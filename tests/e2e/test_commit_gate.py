"""The browser holds what commits with Playwright's async API (the main venv's Playwright) and a
real daemon: a person paired to the session decides in 'ask', an operator's sandbox origin is
flagged and never held, and with a plain async decide every write class of the write pages is
refused before it reaches the recording server (tests/fixtures/write_pages)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

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
from tests.fixtures.write_pages import (
    FETCH_POST,
    LINK_OTHER_ORIGIN,
    MINIWOB_SUBMIT,
    WRITE_PAGES,
    Expected,
    WriteServers,
)


@pytest_asyncio.fixture(loop_scope="function")
async def chromium() -> AsyncIterator[Any]:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM)
        try:
            yield browser
        finally:
            await browser.close()


def arrived(servers: WriteServers, expected: Expected) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return servers.count(expected) > 0

    return check


async def test_an_async_decide_refuses_every_write_class(chromium: Any) -> None:
    asked: list[HeldRequest] = []

    async def refuse(request: HeldRequest) -> CommitDecided:
        asked.append(request)
        await asyncio.sleep(0)  # a real await: the gate runs it as a coroutine
        info = DecisionInfo(status="rejected", by="test", decider="mode", mode="stop")
        return CommitDecided(
            session_id="s", request=request, request_digest=request_digest(request), decision=info
        )

    with WriteServers() as servers:
        for wp in WRITE_PAGES:
            context = await chromium.new_context()
            gate = CommitGate(refuse)
            await gate.attach(context)
            page = await context.new_page()
            await gate.watch(page)  # a page opened after attach: held once this returns
            await page.goto(servers.url(wp))  # the first navigation: the session's origin
            servers.clear()
            before = len(asked)
            await wp.act_async(page)

            async def answered() -> bool:
                return len(asked) > before  # noqa: B023 (awaited within this iteration)

            await until(answered, what=f"{wp.name}: asked")
            taken: list[Any] = []
            await until(
                lambda: taken.extend(gate.take_decisions()) or taken,  # noqa: B023
                what=f"{wp.name}: the refusal recorded",
            )
            await asyncio.sleep(0.4)  # a fixed interval: proving the refused request never comes
            assert asked[-1].kind == wp.kind, wp.name
            assert all(servers.count(e) == 0 for e in wp.held), servers.received()
            assert [d.decision.status for d in taken + gate.take_decisions()] == ["rejected"]
            await gate.detach()
            await context.close()
    assert len(asked) == len(WRITE_PAGES)


async def test_a_paired_person_decides_and_a_sandbox_origin_is_flagged(
    start_daemon: Any, chromium: Any
) -> None:
    with WriteServers() as servers:
        daemon = await start_daemon(sandbox_origins=(servers.other,))
        person = AsyncClient(daemon.url, TEST_TOKEN, role="monitor", name="test-person")
        await person.connect()
        await person.pair(pairing_code(daemon.config.config_dir, "monitor"), "test-person")
        events = await person.subscribe().start()
        context = await chromium.new_context()
        async with AsyncClient(daemon.url, TEST_TOKEN) as agent:
            start = servers.url(FETCH_POST)
            session = await agent.start_session("order", start_url=start, holds="browser")
            gate = await hold_commits(context, session, start_url=start)
            page = await context.new_page()
            await gate.watch(page)
            await page.goto(start)
            gate.trigger("click('go')")
            await FETCH_POST.act_async(page)
            # the person reads the request on the card and approves it
            while not isinstance(event := await events.get(30), ApprovalRequest):
                pass
            assert event.reason == "commit" and event.card is not None
            assert event.card.request is not None
            assert event.card.request.url == f"{servers.home}/api/order"
            await person.decide(event.request_id, "approve")
            await until(arrived(servers, FETCH_POST.held[0]), what="the approved POST")
            (approved,) = gate.take_decisions()
            assert approved.decision.decider == "person" and not approved.flagged
            assert servers.count(FETCH_POST.held[0]) == 1

            # another origin that is a sandbox: flagged, not asked
            await page.goto(servers.url(LINK_OTHER_ORIGIN))
            await LINK_OTHER_ORIGIN.act_async(page)
            await until(arrived(servers, LINK_OTHER_ORIGIN.held[0]), what="the sandbox's page")
            (sandboxed,) = gate.take_decisions()
            assert sandboxed.decision.decider == "sandbox" and sandboxed.flagged
            await gate.detach()
        events.close()
        await person.close()
        await context.close()


async def test_harmless_clicks_ask_nothing_of_the_daemon(start_daemon: Any, chromium: Any) -> None:
    with WriteServers() as servers:
        daemon = await start_daemon()
        context = await chromium.new_context()
        async with AsyncClient(daemon.url, TEST_TOKEN) as agent:
            start = servers.url(MINIWOB_SUBMIT)
            session = await agent.start_session("click submit", start_url=start, holds="browser")
            gate = await hold_commits(context, session, start_url=start)
            page = await context.new_page()
            await gate.watch(page)
            await page.goto(start)
            await MINIWOB_SUBMIT.act_async(page)

            async def ran() -> bool:
                return await page.inner_text("#out") == "done"

            await until(ran, what="the page's script")
            await asyncio.sleep(0.4)  # a fixed interval: proving that nothing is asked
            assert gate.take_decisions() == []
            await gate.detach()
        await context.close()
