"""A subscription's bounded queue and its end, over a real daemon (tiny real model) on
loopback: the oldest events make room for new ones, and ``close`` ends the iteration."""

from __future__ import annotations

import pytest
from webshepherd.protocol import Observation
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.replies import ActionEvent

from tests.fixtures.daemon import TEST_TOKEN, DaemonHandle

pytestmark = pytest.mark.model

CHECKLIST = "Checklist 1: Search for USB-C cables\n- Goal: results are shown"
OBS = Observation(url="http://shop.test/", axtree="RootWebArea 'Shop'\n\t[12] searchbox 'Search'")
ACTIONS = ["click('12')", "fill('12', 'usb-c')", "press('12', 'Enter')", "click('40')"]


async def test_a_full_queue_drops_the_oldest_and_close_ends_it(daemon: DaemonHandle) -> None:
    async with AsyncClient(daemon.url, token=TEST_TOKEN, name="sub-test") as c:
        sub = await c.subscribe("*", maxsize=2).start()
        session = await c.start_session("Buy a cable", checklist=CHECKLIST, observation=OBS)
        await session.checklist(timeout=30)
        for action in ACTIONS:
            await session.act(action)
        await c.ping()  # every event sent before the pong has been queued
        kept = [await sub.get(timeout=5), await sub.get(timeout=5)]
        assert [e.action for e in kept if isinstance(e, ActionEvent)] == ACTIONS[-2:]
        assert sub.dropped >= len(ACTIONS) - 2 + 1  # session.started too, at least
        sub.close()
        with pytest.raises(StopAsyncIteration):
            await sub.get(timeout=5)
        assert [e async for e in sub] == []  # it stays ended
