"""The engine runner keeps a session in memory from its job's start until the result is
recorded: idle eviction never takes a session whose score or checklist is on its way back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from webshepherd.daemon.sessions import Effect

from tests.fixtures.daemon import CANDS, OBS, start_session


async def test_a_session_is_not_evicted_between_its_score_and_the_record(start_daemon):
    daemon = await start_daemon(idle_evict_s=0.2)
    runner = daemon.server._runner()
    record = runner._step
    engaged_while_waiting: list[bool] = []

    async def slow_record(sid: str | None, apply: Callable[[], list[Effect]]) -> None:
        # the job is done (the scheduler no longer lists it); the evict loop runs meanwhile
        await asyncio.sleep(1.0)
        engaged_while_waiting.append(sid in runner.engaged())
        await record(sid, apply)

    runner._step = slow_record
    agent = await daemon.client()
    sid = await start_session(agent)
    assert (await agent.request({"type": "observe", "session_id": sid, **OBS}))["step"] == 1
    scored = await agent.request(
        {"type": "score", "session_id": sid, "candidates": CANDS, "samples": 1,
         "approval": "never"},
        timeout=60,
    )  # fmt: skip
    assert scored["type"] == "scored" and scored["step"] == 1, scored
    assert engaged_while_waiting == [True]
