"""The recording's writes: a big AX tree is written in pieces (issue 17, item 2) and reads
back as the same text, in the same transaction as the rest of its step."""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest
from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.engine.engine import Engine
from webshepherd.daemon.recorder import History
from webshepherd.daemon.recorder.store import BIG_TEXT_CHARS, Recorder
from webshepherd.daemon.records import ObservationRecord, SessionStartedRecord

from tests.fixtures.daemon import start_session

# escapes, quotes and characters of every width, one piece boundary falling mid-line
BIG = ("[7] link 'Caf\u00e9 \"\u2603\" \U0001f600'\n\t[8] StaticText '\\u00e9'\n" * 200_000)[
    : BIG_TEXT_CHARS + 1_234_567
]


def _observation(step: int, axtree: str) -> ObservationRecord:
    return ObservationRecord("s1", step, "http://shop.local/", axtree, None, None, 1.0 + step)


@pytest.fixture
def recorder(tmp_path):
    r = Recorder(tmp_path / "rec.sqlite3")
    r.apply_all([SessionStartedRecord("s1", "buy a mug", None, {}, "agent", 1.0)])
    yield r
    r.close()


def _rows(recorder: Recorder) -> list[tuple[int, str, str]]:
    db = sqlite3.connect(recorder.path)
    try:
        return db.execute(
            "SELECT step, typeof(axtree), axtree FROM observations ORDER BY step"
        ).fetchall()
    finally:
        db.close()


def test_a_big_tree_is_stored_as_the_same_text(recorder):
    assert len(BIG) > BIG_TEXT_CHARS and not BIG.isascii()
    recorder.apply_all([_observation(0, "small tree"), _observation(1, BIG)])
    assert _rows(recorder) == [(0, "text", "small tree"), (1, "text", BIG)]
    steps = sqlite3.connect(recorder.path).execute("SELECT steps FROM sessions").fetchone()[0]
    assert steps == 2


def test_a_failing_big_write_records_nothing_of_its_transaction(recorder):
    recorder.apply_all([_observation(0, "small tree")])
    bad = BIG[:-1] + "\ud800"  # a lone surrogate has no UTF-8
    with pytest.raises(UnicodeEncodeError):
        recorder.apply_all([_observation(1, BIG), _observation(2, bad)])
    assert _rows(recorder) == [(0, "text", "small tree")]
    recorder.apply_all([_observation(1, BIG)])  # the connection is still usable
    assert [r[0] for r in _rows(recorder)] == [0, 1]


async def test_a_sessions_judging_settings_are_recorded(start_daemon, daemon_engine) -> None:
    """The session's metadata keeps the settings it was judged with (prompt style, the
    temperature, the checkpoint's sampling settings), as the engine states them."""
    engine = Engine(daemon_engine.backend, replace(daemon_engine.config, prompt="baseline"))
    d = await start_daemon(engine=engine)
    agent = await d.client()
    sid = await start_session(agent)
    await agent.request({"type": "session.end", "session_id": sid, "outcome": "unknown"})
    tl = History.open(d.config.data_dir / DB_NAME).timeline(sid)
    assert tl is not None and tl.settings == engine.settings
    assert tl.settings["prompt"] == "baseline" and tl.settings["temperature"] == 1.0
    assert set(tl.settings["sampling"]) >= {"top_k", "top_p", "repetition_penalty", "source"}
