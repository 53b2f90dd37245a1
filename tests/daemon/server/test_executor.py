"""Effect execution (server/executor.py) on a real SQLite recording: a step's state change is
kept only once its rows are durable; a failed write rolls the machine back and raises; a kept
step counts as the session's activity."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from webshepherd.daemon.config import QuotaLimits
from webshepherd.daemon.engine.types import ChecklistItem, ParsedChecklist
from webshepherd.daemon.recorder import History, Recorder
from webshepherd.daemon.server.executor import Executor
from webshepherd.daemon.server.fanout import Hub
from webshepherd.daemon.server.offload import Offload
from webshepherd.daemon.server.quotas import Quotas
from webshepherd.protocol import requests as rq

from tests.daemon.sessions.test_machine import OBS, OWNER, make_core

CHECKLIST = ParsedChecklist((ChecklistItem(1, "Search"),), "Checklist 1: Search")


async def test_a_step_is_kept_only_once_its_write_is_durable(tmp_path: Path) -> None:
    now = [10.0]
    core = make_core(monotonic=lambda: now[0])
    tasks: list[asyncio.Task[None]] = []

    def spawn(owner: int | None, coro: Coroutine[Any, Any, None]) -> None:
        tasks.append(asyncio.create_task(coro))

    offload = Offload()
    executor = Executor(core, Hub(), Quotas(QuotaLimits()), offload, spawn)
    executor.recorder = recorder = Recorder(tmp_path / "db.sqlite")
    try:
        start = rq.SessionStart(id="s", intent="buy a cable", observation=OBS)
        await executor.step(None, lambda: core.start(OWNER, start, CHECKLIST))
        (sid,) = core.sessions
        now[0] = 50.0
        observe = rq.Observe(id="o", session_id=sid, url="http://shop.local/2", axtree="A")
        await executor.step(sid, lambda: core.observe(OWNER, observe))
        assert core.get(sid).step == 1 and core.get(sid).last_active == 50.0
        assert History(recorder).summary(sid) is not None
        with sqlite3.connect(tmp_path / "db.sqlite") as db:  # the next write fails
            db.execute("DROP TABLE observations")
        now[0] = 90.0
        with pytest.raises(sqlite3.OperationalError, match="no such table: observations"):
            await executor.step(sid, lambda: core.observe(OWNER, observe))
        st = core.get(sid)
        assert (st.step, st.url, st.last_active) == (1, "http://shop.local/2", 50.0)
    finally:
        recorder.close()
        offload.close()
        for t in tasks:
            t.cancel()
