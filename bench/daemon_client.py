"""A minimal WebSocket client of a real daemon, shared by the benchmarks."""

from __future__ import annotations

import json
from typing import Any


class Client:
    """One connection; :meth:`request` sends a message and waits for the reply with its id."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.n = 0

    async def request(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.n += 1
        rid = f"r{self.n}"
        await self.ws.send(json.dumps({**msg, "id": rid}))
        while True:
            reply = json.loads(await self.ws.recv())
            if reply.get("id") == rid:
                return reply


async def open_session(
    url: str, token: str, name: str, session_start: dict[str, Any]
) -> tuple[Client, str]:
    """Connect as an agent named ``name`` and start a session with the fields of
    ``session_start`` (intent, start_url, observation, checklist); the client and its id."""
    from websockets.asyncio.client import connect

    ws = await connect(url, open_timeout=30, max_size=None)
    c = Client(ws)
    hello = {
        "type": "hello",
        "protocol": 1,
        "token": token,
        "client": {"name": name, "version": "1", "role": "agent"},
    }
    welcome = await c.request(hello)
    assert welcome["type"] == "welcome", welcome
    started = await c.request({"type": "session.start", **session_start})
    assert started["type"] == "session.started", started
    return c, started["session_id"]
