"""A session's row: its start, its end and the scorer that judged it read back; a recording
made before scorers (or their settings) were kept reads none."""

from __future__ import annotations

from webshepherd.daemon.records.sessions import (
    EnvironmentRecord,
    Scorer,
    ScorerRecord,
    SessionEndedRecord,
    answer,
    environment,
    row,
    scorer,
)
from webshepherd.protocol.common import EnvironmentInfo
from webshepherd.protocol.replies import SessionEnded


def test_a_session_reads_back_its_start_end_and_scorer(rec) -> None:
    assert scorer(rec.db, "s1") == Scorer(None, None, {})
    assert answer(rec.db, "s1") is None and row(rec.db, "nope") is None
    settings = {"temperature": 1.0, "prompt": "baseline"}
    ended = SessionEnded(session_id="s1", outcome="success", answer="the blue mug")
    rec.apply_all(
        [
            ScorerRecord("s1", "tiny", "transformers", {"prompt": "authors"}),
            ScorerRecord("s1", "WebShepherd_3B", "vllm", settings),  # the latest wins
            SessionEndedRecord(ended, 9.5),
        ]
    )
    got = row(rec.db, "s1")
    assert got is not None
    assert (got["intent"], got["start_url"], got["source"], got["created_at"]) == (
        "buy a mug",
        "http://shop.local/",
        "agent",
        1.0,
    )
    assert (got["outcome"], got["ended_at"]) == ("success", 9.5)
    assert answer(rec.db, "s1") == "the blue mug"
    assert scorer(rec.db, "s1") == Scorer("WebShepherd_3B", "vllm", settings)
    rec.db.execute("DROP TABLE session_scorer_settings")  # as a recording made before them
    assert scorer(rec.db, "s1") == Scorer("WebShepherd_3B", "vllm", {})
    rec.db.execute("DROP TABLE session_scorers")
    assert scorer(rec.db, "s1") == Scorer(None, None, {})


def test_what_resets_a_session_environment_reads_back(rec) -> None:
    assert environment(rec.db, "s1") is None  # recorded without one
    env = EnvironmentInfo(task="browsergym/miniwob.click-test", seed=7, options={"a": [1]})
    rec.apply(EnvironmentRecord("s1", env))
    assert environment(rec.db, "s1") == env and environment(rec.db, "s2") is None
    rec.db.execute("DROP TABLE session_environments")  # as a recording made before them
    assert environment(rec.db, "s1") is None
