"""Bounded inputs over real sockets: a huge intent, thought, action, checklist or answer is
refused as ``invalid_message`` with the limit named, and another session's step is scored
meanwhile (issue 23: a 16 MB intent held every session's score for 41 s). The second session
passes a reference checklist; what the model writes does not matter here."""

from __future__ import annotations

import asyncio

import pytest
from webshepherd.protocol.common import (
    MAX_ACTION_CHARS,
    MAX_ANSWER_CHARS,
    MAX_CHECKLIST_CHARS,
    MAX_INTENT_CHARS,
    MAX_THOUGHT_CHARS,
)

from tests.fixtures.daemon import OBS, REFERENCE, score_without_approval, start_session
from tests.hostile.helpers import no_tracebacks, still_serving

pytestmark = pytest.mark.model


async def test_a_huge_intent_is_refused_and_another_session_is_scored(daemon, caplog):
    attacker = await daemon.client(name="attacker")
    other = await daemon.client(name="other")
    sid = await start_session(other)
    huge = {
        "type": "session.start",
        "id": "huge",
        "intent": "Buy " * 4_000_000,  # 16 MB
        "start_url": OBS["url"],
        "observation": OBS,
    }
    await attacker.send(huge)  # a frame this big is answered without its id (not read twice)
    refused, scored = await asyncio.gather(
        attacker.wait_for("error", timeout=120), score_without_approval(other, sid, samples=1)
    )
    assert (refused["type"], refused["code"]) == ("error", "invalid_message"), refused
    assert "intent" in refused["message"] and f"{MAX_INTENT_CHARS}" in refused["message"]
    assert scored["type"] == "scored", scored
    sessions = await other.request({"type": "sessions.list"})
    assert [s["session_id"] for s in sessions["sessions"]] == [sid]  # nothing was started
    await still_serving(daemon)
    no_tracebacks(caplog)


async def test_each_bounded_field_names_its_limit(daemon, caplog):
    agent = await daemon.client()
    sid = await start_session(agent)
    cases = [
        (
            {
                "type": "session.start",
                "intent": "Buy",
                "checklist": "x" * (MAX_CHECKLIST_CHARS + 1),
            },
            "checklist",
            MAX_CHECKLIST_CHARS,
        ),
        (
            {
                "type": "score",
                "session_id": sid,
                "candidates": [{"thought": "t" * (MAX_THOUGHT_CHARS + 1), "action": "noop()"}],
            },
            "candidates.0.thought",
            MAX_THOUGHT_CHARS,
        ),
        (
            {"type": "action", "session_id": sid, "action": "a" * (MAX_ACTION_CHARS + 1)},
            "action",
            MAX_ACTION_CHARS,
        ),
        (
            {"type": "session.end", "session_id": sid, "answer": "a" * (MAX_ANSWER_CHARS + 1)},
            "answer",
            MAX_ANSWER_CHARS,
        ),
    ]
    for message, field, limit in cases:
        await agent.send({"id": agent.next_id(), **message})  # above 64 KiB: answered id-less
        reply = await agent.wait_for("error")
        assert (reply["type"], reply["code"]) == ("error", "invalid_message"), reply
        assert reply["message"].startswith(f"{field}:") and f"{limit}" in reply["message"]
    # at the limits themselves, all is accepted
    ok = await agent.request(
        {"type": "action", "session_id": sid, "action": "a" * MAX_ACTION_CHARS}
    )
    assert ok["type"] == "action.recorded", ok
    started = await agent.request(
        {"type": "session.start", "intent": "b" * MAX_INTENT_CHARS, "checklist": REFERENCE}
    )
    assert started["type"] == "session.started", started
    no_tracebacks(caplog)
