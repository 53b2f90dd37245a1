"""The recording's writes: a big AX tree is written in pieces (issue 17, item 2) and reads
back as the same text, in the same transaction as the rest of its step; a scoring reads back
as the wire types it was sent as."""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest
from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.engine.engine import Engine
from webshepherd.daemon.recorder import History
from webshepherd.daemon.recorder.store import Recorder
from webshepherd.daemon.records.observations import BIG_TEXT_CHARS, ObservationRecord
from webshepherd.daemon.records.scores import ScoreRecord
from webshepherd.daemon.records.sessions import SessionStartedRecord
from webshepherd.protocol.common import (
    AgentInfo,
    Candidate,
    CandidateResult,
    ScoredCandidate,
    Timing,
)
from webshepherd.protocol.replies import Observed, SessionStarted

from tests.fixtures.daemon import start_session

# escapes, quotes and characters of every width, one piece boundary falling mid-line
BIG = ("[7] link 'Caf\u00e9 \"\u2603\" \U0001f600'\n\t[8] StaticText '\\u00e9'\n" * 200_000)[
    : BIG_TEXT_CHARS + 1_234_567
]


def _observation(step: int, axtree: str) -> ObservationRecord:
    event = Observed(session_id="s1", step=step, url="http://shop.local/", axtree=axtree)
    return ObservationRecord(event, None, 1.0 + step)


@pytest.fixture
def recorder(tmp_path):
    r = Recorder(tmp_path / "rec.sqlite3")
    started = SessionStarted(session_id="s1", intent="buy a mug", agent=AgentInfo(), source="agent")
    r.apply_all([SessionStartedRecord(started, 1.0)])
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


def test_a_scoring_reads_back_as_the_wire_candidates_and_results(recorder):
    """Each candidate of a recorded scoring is the score request's Candidate and the scored
    reply's CandidateResult, every field of it (samples with their texts, items and unparsed
    reasons, the unparsed count, the judge's inputs); a result at the defaults takes no
    ``candidate_judging`` row, and a recording made before that table reads the defaults."""
    probs = {"index": 1, "yes": 0.7, "in_progress": 0.2, "no": 0.1}
    sent = [
        Candidate(thought="search first", action="click('12')"),
        Candidate(action="scroll(0, 400)"),
    ]
    results = [
        CandidateResult(
            index=0,
            reward=0.7,
            items=[probs],
            feedback="it searches",
            samples=[{"reward": 0.7, "text": "judgement 0", "items": [probs]}],
            parsed_samples=1,
            probabilities="top_k",
        ),
        CandidateResult(
            index=1,
            reward=None,
            feedback="no label parsed",
            samples=[{"reward": None, "text": "no answer", "unparsed": "no_answer"}],
            parsed_samples=0,
            unparsed_samples=1,
            judge_inputs="text+image",
        ),
    ]
    recorder.apply_all(
        [
            _observation(0, "tree"),
            ScoreRecord(
                "s1",
                "q1",
                0,
                1,
                "never",
                sent,
                results,
                0,
                Timing(queue_ms=1.0, model_ms=2.0),
                3.0,
                0.7,
            ),
        ]
    )
    history = History.open(recorder.path)
    try:
        (summary,) = history.sessions()
        tl = history.timeline(summary.session_id)
    finally:
        history.close()
    assert tl is not None
    sc = tl.steps[0].scoring
    assert sc is not None and sc.best == 0
    assert sc.candidates == [ScoredCandidate(c, r) for c, r in zip(sent, results, strict=True)]
    judged = recorder.db.execute(
        "SELECT idx, unparsed_samples, judge_inputs FROM candidate_judging"
    )
    assert [tuple(r) for r in judged] == [(1, 1, "text+image")]  # candidate 0: the defaults
    recorder.db.execute("DROP TABLE candidate_judging")  # as a recording made before it
    history = History.open(recorder.path)
    try:
        old = history.timeline(summary.session_id)
    finally:
        history.close()
    assert old is not None and old.steps[0].scoring is not None
    unkept = {"unparsed_samples": 0, "judge_inputs": "text"}
    assert old.steps[0].scoring.candidates == [
        ScoredCandidate(sent[0], results[0]),
        ScoredCandidate(
            sent[1],
            results[1].model_copy(
                update={
                    **unkept,
                    "samples": [results[1].samples[0].model_copy(update={"unparsed": None})],
                }
            ),
        ),
    ]


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
