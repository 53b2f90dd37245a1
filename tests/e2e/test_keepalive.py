"""The idle keepalive: with no extension events for 45 s, Chrome would stop an MV3 worker
after ~30 s (closing its WebSocket); the 20 s application `ping` keeps it, and the daemon's
extension connection, alive. Chromium is launched without Playwright (whose own DevTools
connection keeps workers alive); the token is set over a raw DevTools connection that is
closed before the wait."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from webshepherd.daemon.browser.chromium import launch_args
from webshepherd.daemon.extension_id import EXTENSION_ID
from websockets.asyncio.client import connect

from tests.e2e.browser import CHROMIUM, DIST, require_browser
from tests.e2e.test_worker_restart import extension_conns
from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.poll import until

require_browser()

IDLE_S = 45


async def cdp_configure(user_data_dir: Path, settings: dict) -> None:
    """Set the extension's settings from its worker over a raw DevTools connection, then leave."""
    port_file = user_data_dir / "DevToolsActivePort"
    await until(port_file.exists, what="DevToolsActivePort")
    await until(lambda: len(port_file.read_text().split("\n")) >= 2, what="the port")
    port, path = port_file.read_text().split("\n")[:2]
    async with connect(f"ws://127.0.0.1:{port}{path}", max_size=None) as ws:
        ids = iter(range(1, 10_000))

        async def send(method: str, params: dict | None = None, session: str | None = None):
            mid = next(ids)
            msg = {"id": mid, "method": method, "params": params or {}}
            if session:
                msg["sessionId"] = session
            await ws.send(json.dumps(msg))
            while True:
                reply = json.loads(await asyncio.wait_for(ws.recv(), 20))
                if reply.get("id") == mid:
                    assert "error" not in reply, reply
                    return reply["result"]

        async def service_worker() -> dict | None:
            targets = (await send("Target.getTargets"))["targetInfos"]
            return next(
                (t for t in targets if t["type"] == "service_worker" and EXTENSION_ID in t["url"]),
                None,
            )

        worker = await until(service_worker, what="the extension's service worker", interval=0.2)
        session = (
            await send("Target.attachToTarget", {"targetId": worker["targetId"], "flatten": True})
        )["sessionId"]
        await send("Runtime.enable", {}, session)
        expr = (
            f"self.webshepherd ? chrome.storage.local.set({json.dumps(settings)}).then(() => 1) : 0"
        )

        async def settings_stored() -> bool:
            got = await send(
                "Runtime.evaluate", {"expression": expr, "awaitPromise": True}, session
            )
            return got["result"].get("value") == 1

        await until(settings_stored, what="the settings in the worker's storage", interval=0.2)
        await send("Target.detachFromTarget", {"sessionId": session})


async def test_idle_worker_stays_connected(start_daemon, tmp_path):
    daemon = await start_daemon(allowed_extension_ids=(EXTENSION_ID,))
    profile = tmp_path / "profile"
    proc = subprocess.Popen(
        [
            CHROMIUM,
            "--headless",
            *launch_args(DIST),
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await cdp_configure(profile, {"url": daemon.url, "token": TEST_TOKEN, "flags": "default"})
        await until(lambda: len(extension_conns(daemon)) == 1, what="the extension to connect")
        [conn_id] = extension_conns(daemon)
        await asyncio.sleep(IDLE_S)  # no tabs, no events: only the keepalive
        assert list(extension_conns(daemon)) == [conn_id]  # the same connection, never dropped
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
