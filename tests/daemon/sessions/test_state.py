"""The machine's live state of a session holds the session header (issue 43.3): restored from
the recording as it was read, replaced as the session moves, rolled back with the rest."""

from __future__ import annotations

from dataclasses import fields

from webshepherd.daemon.records.stored import StoredScore, StoredSession
from webshepherd.daemon.sessions.state import LiveSession, restored
from webshepherd.protocol.common import AgentInfo, SessionHeader, Turn

HEADER = SessionHeader(
    session_id="old1", intent="buy a cable", start_url="http://shop.local/",
    agent=AgentInfo(name="a"), source="agent", created_at=5.0, latest_reward=0.4,
)  # fmt: skip


def stored(header: SessionHeader = HEADER) -> StoredSession:
    return StoredSession(
        header, None, None, (2, "http://shop.local/p", "RootWebArea 'P'"),
        ((1, Turn("t", "click('1')")),), (StoredScore(1, (("click('1')", 0.7, None),)),),
        mode="watch",
    )  # fmt: skip


def test_no_other_view_declares_the_headers_fields():
    header_fields = set(SessionHeader.model_fields)
    for view in (LiveSession, StoredSession):
        names = {f.name for f in fields(view)}
        assert "header" in names and not names & header_fields, view


def test_a_restored_session_holds_the_recorded_header_and_summarises_from_it():
    st = restored(stored())
    assert st.header is HEADER and st.mode == "watch" and not st.ended
    assert st.summary().model_dump() == {
        **HEADER.model_dump(), "state": "running", "steps": 1, "mode": "watch",
    }  # fmt: skip
    over = HEADER.model_copy(update={"outcome": "success", "ended_at": 9.0})
    done = restored(stored(over))
    assert done.ended and done.summary().state == "ended" and done.summary().mode is None


def test_reward_and_end_replace_the_header_and_a_roll_back_restores_it():
    st = LiveSession(HEADER)
    before = st.snapshot()
    st.set_reward(0.9)
    st.end("failure", "no cable", 12.0)
    now = st.header
    assert (now.latest_reward, now.outcome, now.ended_at) == (0.9, "failure", 12.0)
    assert st.ended and st.answer == "no cable" and st.summary().state == "ended"
    assert HEADER.latest_reward == 0.4 and HEADER.ended_at is None  # the old header unchanged
    st.roll_back(before)
    assert st.header is HEADER and not st.ended and st.answer is None
