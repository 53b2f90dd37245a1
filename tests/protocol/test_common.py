"""The session header (issue 43.3): one declaration of a session's fields, the wire summary
built on it with its JSON shape unchanged."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from webshepherd.protocol.common import AgentInfo, SessionHeader, SessionSummary

HEADER_FIELDS = [
    "session_id", "intent", "start_url", "agent", "source", "outcome", "latest_reward",
    "created_at", "ended_at",
]  # fmt: skip
AGENT = {"name": "my-agent", "planning": "step", "plan": None, "stalled_after": 3}
#: A summary as the wire carried it before the header existed (protocol/vectors' sessions).
SUMMARY = {
    "session_id": "8f3c2a9e",
    "intent": "Buy the cheapest USB-C cable",
    "start_url": "http://shop.local/",
    "agent": AGENT,
    "source": "agent",
    "state": "ended",
    "outcome": "success",
    "steps": 4,
    "latest_reward": 0.8,
    "created_at": 1790000000.0,
    "ended_at": 1790000060.5,
    "mode": None,
}


def header() -> SessionHeader:
    return SessionHeader(
        session_id="8f3c2a9e",
        intent="Buy the cheapest USB-C cable",
        start_url="http://shop.local/",
        agent=AgentInfo(name="my-agent"),
        outcome="success",
        latest_reward=0.8,
        created_at=1790000000.0,
        ended_at=1790000060.5,
    )


def test_the_summary_of_a_header_is_its_fields_and_the_live_facts():
    h = header()
    summary = h.summary("ended", 4)
    assert type(summary) is SessionSummary
    assert summary.model_dump(mode="json") == SUMMARY
    assert {f: getattr(summary, f) for f in HEADER_FIELDS} == dict(h)
    live = h.summary("waiting_approval", 2, "watch").model_dump(mode="json")
    assert live == {**SUMMARY, "state": "waiting_approval", "steps": 2, "mode": "watch"}


def test_the_summarys_json_shape_and_defaults_are_unchanged():
    assert list(SessionHeader.model_fields) == HEADER_FIELDS
    assert list(SessionSummary.model_fields) == [*HEADER_FIELDS, "state", "steps", "mode"]
    least = SessionSummary.model_validate({"session_id": "s", "intent": "i", "created_at": 1.0})
    assert least.model_dump(mode="json") == {
        "session_id": "s", "intent": "i", "start_url": None,
        "agent": {"name": "agent", "planning": "step", "plan": None, "stalled_after": 3},
        "source": "agent", "state": "running", "outcome": None, "steps": 0,
        "latest_reward": None, "created_at": 1.0, "ended_at": None, "mode": None,
    }  # fmt: skip
    assert SessionSummary.model_validate(SUMMARY).model_dump(mode="json") == SUMMARY
    schema = SessionSummary.model_json_schema()
    assert sorted(schema["required"]) == ["created_at", "intent", "session_id"]
    assert "description" not in schema  # the header's docstring is not the summary's
    described = {k: v["description"] for k, v in schema["properties"].items() if "description" in v}
    assert described == {
        "created_at": "Unix time, seconds.",
        "mode": "The session's mode now (addition to v1; null: not live).",
    }


def test_a_header_is_immutable_and_a_summary_is_not():
    h = header()
    with pytest.raises(ValidationError, match="frozen"):
        h.latest_reward = 0.1  # type: ignore[misc]
    moved = h.model_copy(update={"latest_reward": 0.1})
    assert (moved.latest_reward, h.latest_reward) == (0.1, 0.8)
    summary = h.summary("running", 0)
    summary.steps = 5
    assert summary.steps == 5


def test_a_bad_header_is_refused_with_the_field_named():
    with pytest.raises(ValidationError, match="session_id"):
        SessionHeader(session_id="", intent="i", created_at=1.0)
    with pytest.raises(ValidationError, match="source"):
        SessionHeader.model_validate(
            {"session_id": "s", "intent": "i", "created_at": 1.0, "source": "robot"}
        )
