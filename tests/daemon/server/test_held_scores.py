"""Nothing blocks silently: a score that did not ask for approval is held only while a person can
answer (an extension or a monitor is connected), and a held score's client is told at once why
and how it gets decided (the ``approval.request`` event, and a warning from the SDK).

Set-up: the daemon's threshold is above any reward (2.0; an unparsed reward counts as below
too), so whatever the tiny model writes, the policy asks for a person; the sessions carry a
reference checklist. These tests are about when a score waits, not about the rewards.
"""

from __future__ import annotations

import asyncio
import logging

import pytest_asyncio
from webshepherd.protocol.client import AsyncClient

from tests.fixtures.daemon import CANDS, OBS, REFERENCE, TEST_TOKEN
from tests.fixtures.poll import until

CANDIDATES = [(c["thought"], c["action"]) for c in CANDS]


@pytest_asyncio.fixture(loop_scope="function")
async def strict_daemon(start_daemon):
    return await start_daemon(approval_threshold=2.0, approval_drop=None, approval_timeout_s=60)


async def test_no_person_connected_the_score_is_not_held(strict_daemon, caplog) -> None:
    async with AsyncClient(strict_daemon.url, TEST_TOKEN) as agent:
        session = await agent.start_session("Buy a cable", observation=OBS, checklist=REFERENCE)
        with caplog.at_level(logging.WARNING, logger="webshepherd"):
            scored = await session.score(CANDIDATES, samples=1, timeout=60)
        assert scored.decision.status == "auto"
        assert scored.decision.index == scored.best
    assert "waits for a person" not in caplog.text
    assert len(strict_daemon.server.core.approvals) == 0


async def test_with_a_monitor_the_score_waits_and_its_client_is_told_at_once(
    strict_daemon, caplog
) -> None:
    monitor = await strict_daemon.client(role="monitor", name="tui")
    async with AsyncClient(strict_daemon.url, TEST_TOKEN) as agent:
        session = await agent.start_session("Buy a cable", observation=OBS, checklist=REFERENCE)
        with caplog.at_level(logging.WARNING, logger="webshepherd"):
            scoring = asyncio.create_task(session.score(CANDIDATES, samples=1, timeout=60))
            req = await monitor.wait_for("approval.request", timeout=60)
            assert req["reason"] == "below_threshold"

            async def told() -> bool:
                return "waits for a person" in caplog.text

            await until(told, what="the SDK's warning about the held score")
            assert not scoring.done()  # it waits for the person
        line = next(r.getMessage() for r in caplog.records if "waits" in r.getMessage())
        assert f"the score of step {req['step'] + 1} waits for a person" in line  # steps.py
        assert "below the daemon's approval threshold" in line
        assert "`webshepherd tui`" in line and "within 60 s" in line
        assert "approval='never'" in line
        reply = await monitor.request(
            {"type": "approval.decide", "request_id": req["request_id"], "decision": "approve"}
        )
        assert reply["type"] == "approval.resolved", reply
        scored = await scoring
        assert scored.decision.status == "approved"


async def test_a_score_that_asks_waits_even_with_nobody_to_answer(strict_daemon, caplog) -> None:
    async with AsyncClient(strict_daemon.url, TEST_TOKEN) as agent:
        session = await agent.start_session("Buy a cable", observation=OBS, checklist=REFERENCE)
        with caplog.at_level(logging.WARNING, logger="webshepherd"):
            scoring = asyncio.create_task(
                session.score(CANDIDATES, samples=1, approval="always", timeout=60)
            )

            async def told() -> bool:
                return "asked for approval (approval='always')" in caplog.text

            await until(told, 60, "the SDK's warning about the held score")
        assert not scoring.done()
        scoring.cancel()
