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


async def test_a_get_the_operator_names_waits_in_ask_and_arrives_once_approved(
    start_daemon: Any, chromium: Any
) -> None:
    """serve --commits: the gate takes the daemon's patterns from session.started (its caller
    names none); with nobody paired the GET is refused at once, with a person paired it waits
    unsent until approved and then arrives exactly once; a GET no pattern names goes."""
    remove = Expected("GET", "home", "/cart/remove?id=3")
    with WriteServers() as servers:
        daemon = await start_daemon(commits=(f"GET {servers.home}/cart/remove*",))
        context = await chromium.new_context()
        async with AsyncClient(daemon.url, TEST_TOKEN) as agent:
            start = f"{servers.home}/escape_get_remove.html"
            session = await agent.start_session("tidy the cart", start_url=start, holds="browser")
            gate = await hold_commits(context, session, start_url=start)
            page = await context.new_page()
            await gate.watch(page)
            await page.goto(start)
            await page.click("#go", no_wait_after=True)  # nobody paired: refused at once
            refused: list[Any] = []
            await until(
                lambda: refused.extend(gate.take_decisions()) or refused, what="the GET refused"
            )
            await asyncio.sleep(0.4)  # a fixed interval: proving the refused GET never comes
            assert servers.count(remove) == 0, servers.received()
            ((held, decision),) = [(d.request, d.decision) for d in refused]
            assert (held.method, held.kind, decision.status, decision.decider) == (
                "GET", "write", "rejected", "daemon",
            )  # fmt: skip

            person = AsyncClient(daemon.url, TEST_TOKEN, role="monitor", name="test-person")
            await person.connect()
            await person.pair(pairing_code(daemon.config.config_dir, "monitor"), "test-person")
            events = await person.subscribe().start()
            await page.goto(start)
            await page.click("#go", no_wait_after=True)
            while not isinstance(event := await events.get(30), ApprovalRequest):
                pass
            assert event.card is not None and event.card.request is not None
            assert (event.card.request.method, event.card.request.url) == (
                "GET", f"{servers.home}/cart/remove?id=3",
            )  # fmt: skip
            assert [h.rule for h in event.card.predicts] == ["commit_get"]
            await asyncio.sleep(0.4)  # the person has not decided: still unsent
            assert servers.count(remove) == 0
            await person.decide(event.request_id, "approve")
            await until(arrived(servers, remove), what="the approved GET")
            await asyncio.sleep(0.4)
            assert servers.count(remove) == 1
            await page.goto(start)
            await page.click("#keep")  # a GET no pattern names: not asked
            await until(arrived(servers, Expected("GET", "home", "/cart/view")), what="a plain GET")
            assert [d.decision.status for d in gate.take_decisions()] == ["approved"]
            await gate.detach()
            events.close()
            await person.close()
        await context.close()
