"""A session of any size stays readable (issue 14, item 6): ``session.get`` pages its events
under the frame limit (``next``/``after``), the SDK joins the pages, and the TUI's catch-up
loads the session. Here the limit is 4 MiB and three observations hold 2.5 MB trees each."""

from __future__ import annotations

import json

import pytest
from webshepherd.protocol.client import AsyncClient
from webshepherd.tui.app import WebShepherdApp

from tests.fixtures.daemon import TEST_TOKEN, start_session
from tests.tui.helpers import FixedProbe, wait_until

LIMIT = 4 * 1024 * 1024
TREES = [f"[{k}] StaticText 'page {k}'\n" * 100_000 for k in range(3)]  # ~2.5 MB each


async def _big_session(daemon) -> str:
    agent = await daemon.client(max_size=None)
    sid = await start_session(agent)
    for k, tree in enumerate(TREES):
        r = await agent.request(
            {"type": "observe", "session_id": sid, "url": f"http://p/{k}", "axtree": tree}
        )
        assert r["type"] == "observed"
    return sid


async def test_session_get_pages_under_the_frame_limit(start_daemon):
    daemon = await start_daemon(max_frame_bytes=LIMIT)
    sid = await _big_session(daemon)
    monitor = await daemon.client(role="monitor", max_size=None)
    events, after, pages = [], 0, 0
    while after is not None:
        await monitor.send(
            {"type": "session.get", "id": f"g{pages}", "session_id": sid, "after": after}
        )
        raw = await monitor.ws.recv()
        assert len(raw.encode()) <= LIMIT
        reply = json.loads(raw)
        assert reply["type"] == "session" and reply["events"]
        events += reply["events"]
        after, pages = reply["next"], pages + 1
    assert pages >= 3
    trees = [e["axtree"] for e in events if e["type"] == "observed"][1:]
    assert trees == TREES


async def test_the_sdk_and_the_tui_read_a_big_session(start_daemon):
    daemon = await start_daemon(max_frame_bytes=LIMIT)
    sid = await _big_session(daemon)
    async with AsyncClient(daemon.url, token=TEST_TOKEN) as c:
        got = await c.session(sid)
        assert got.next is None
        assert [e["axtree"] for e in got.events if e["type"] == "observed"][1:] == TREES
    app = WebShepherdApp(daemon.url, TEST_TOKEN, probe=FixedProbe(), refresh_s=0.1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.link.catch_ups >= 1, what="the catch-up")
        await wait_until(pilot, lambda: sid in app.state.sessions, what="the big session")
        assert app.state.sessions[sid].last_url == "http://p/2"  # the last page was read


@pytest.mark.parametrize("after", [0, 2, 10])
async def test_after_skips_events(daemon, after):
    c = await daemon.client()
    sid = await start_session(c)
    whole = await c.request({"type": "session.get", "session_id": sid})
    part = await c.request({"type": "session.get", "session_id": sid, "after": after})
    assert part["events"] == whole["events"][after:] and part["next"] is None
