"""Read-only queries (server/queries.py) over a real SQLite recording: a loaded session is
listed and read as the machine has it now, a recorded one as recorded, an unknown one is a
clear error."""

from __future__ import annotations

from pathlib import Path

import pytest
from webshepherd.daemon.recorder import History, Recorder
from webshepherd.daemon.server.queries import Queries
from webshepherd.daemon.sessions import Record
from webshepherd.protocol import requests as rq
from webshepherd.protocol.errors import UnknownSessionError
from webshepherd.protocol.union import parse_server_message

from tests.daemon.sessions.test_machine import OWNER, make_core, started


def test_loaded_sessions_are_read_as_the_machine_has_them(tmp_path: Path) -> None:
    core = make_core()
    sid = started(core)
    recorder = Recorder(tmp_path / "db.sqlite")
    recorder.apply_all([e for e in core.start(OWNER, rq.SessionStart(id="s", intent="x"))
                        if isinstance(e, Record)])  # fmt: skip
    other = next(iter(set(core.sessions) - {sid}))
    recorder.apply_all(
        [e for e in core.start(OWNER, rq.SessionStart(id="t", intent="y")) if isinstance(e, Record)]
    )
    queries = Queries(core, max_frame_bytes=1 << 20)
    queries.history = History(recorder)
    core.set_mode(OWNER, "tui", rq.SessionMode(id="m", session_id=other, mode="stop"))
    listed = {s.session_id: s for s in queries.sessions(10)}
    assert sid not in listed  # never recorded: not listed
    assert listed[other].mode == "stop"  # live: as the machine has it, not as recorded
    core.evict(other)
    assert {s.session_id: s for s in queries.sessions(10)}[other].mode is None  # as recorded
    reply = parse_server_message(queries.session_get(rq.SessionGet(id="g", session_id=other)))
    assert reply.type == "session" and reply.session.session_id == other
    with pytest.raises(UnknownSessionError, match="no session 'nope'"):
        queries.session_get(rq.SessionGet(id="g", session_id="nope"))
    recorder.close()
