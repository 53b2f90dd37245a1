"""A session's row: its start, its end and the scorer that judged it read back; a recording
made before scorers (or their settings) were kept reads none."""

from __future__ import annotations

from webshepherd.daemon.records.sessions import (
    Scorer,
    ScorerRecord,
    SessionEndedRecord,
    answer,
    row,
    scorer,
)
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
