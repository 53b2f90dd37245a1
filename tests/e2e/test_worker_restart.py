"""The service worker is stopped (as Chrome does to an idle MV3 worker): the next event
starts it again, it reconnects to the daemon (a new extension connection) and resumes the
session its tab was following: subscribed again, a fresh observation, the hook still works."""

from __future__ import annotations

from tests.e2e.browser import GOLDEN, hook_key, require_browser, serve_dir
from tests.e2e.test_golden_capture import hook
from tests.fixtures.poll import until

require_browser()


def extension_conns(daemon) -> dict[int, object]:
    return {i: c for i, c in daemon.server.hub.conns.items() if c.declared == "extension"}


async def observed_steps(monitor, sid: str) -> list[int]:
    got = await monitor.request({"type": "session.get", "session_id": sid})
    return [e["step"] for e in got["events"] if e["type"] == "observed"]


async def test_worker_restart_reconnects_and_resumes(paired):
    daemon, browser = paired
    with serve_dir(GOLDEN) as base:
        page = await browser.ctx.new_page()
        await page.goto(f"{base}/p2-shop.html", wait_until="load")
        key = await hook_key(daemon)
        started = await hook(page, "session.start", intent="Buy a desk lamp", key=key)
        assert started["type"] == "session.started", started
        sid = started["session_id"]
        await until(lambda: len(extension_conns(daemon)) == 1, what="one extension connection")
        [(first_id, first)] = extension_conns(daemon).items()
        await until(lambda: first.follows(sid), what="the extension following the session")
        monitor = await daemon.client(role="monitor")
        before = await observed_steps(monitor, sid)

        # stop the extension's service worker through the DevTools protocol
        ext_id = browser.worker.url.split("/")[2]
        ext_page = await browser.ctx.new_page()
        await ext_page.goto(f"chrome-extension://{ext_id}/options.html")
        cdp = await browser.ctx.new_cdp_session(ext_page)
        await cdp.send("ServiceWorker.enable")
        await cdp.send("ServiceWorker.stopAllWorkers")
        await until(
            lambda: first_id not in daemon.server.hub.conns, what="the old connection to close"
        )

        # the next extension event (the page asks the hook for its status) starts it again
        status = await hook(page, "status", key=key)
        await until(lambda: len(extension_conns(daemon)) == 1, what="a new extension connection")
        [(second_id, second)] = extension_conns(daemon).items()
        assert second_id != first_id
        await until(lambda: second.follows(sid), what="the new connection following the session")
        assert status["session_id"] == sid  # the tab's session survived the restart

        # resumed: a fresh observation of where the tab is now, and the hook works on
        async def resumed() -> bool:
            return len(await observed_steps(monitor, sid)) > len(before)

        await until(resumed, what="a fresh observation after the restart", interval=0.2)
        action = await hook(page, "action", action="click('24')", key=key)
        assert action["type"] == "action.recorded", action
        got = await monitor.request({"type": "session.get", "session_id": sid})
        assert [e["action"] for e in got["events"] if e["type"] == "action"] == ["click('24')"]
