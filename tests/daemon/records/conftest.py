"""A recording on disk with one started session ``s1``: the kinds' writes go through a real
:class:`Recorder` (its transactions), their reads take its connection."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from webshepherd.daemon.recorder import Recorder
from webshepherd.daemon.records.sessions import SessionStartedRecord
from webshepherd.protocol.common import AgentInfo
from webshepherd.protocol.replies import SessionStarted


@pytest.fixture
def rec(tmp_path: Path) -> Iterator[Recorder]:
    r = Recorder(tmp_path / "rec.sqlite3")
    started = SessionStarted(
        session_id="s1",
        intent="buy a mug",
        start_url="http://shop.local/",
        agent=AgentInfo(),
        source="agent",
    )
    r.apply(SessionStartedRecord(started, 1.0))
    yield r
    r.close()
