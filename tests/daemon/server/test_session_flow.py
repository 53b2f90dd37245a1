"""Sessions end to end over a real socket with the tiny real model; bad input kills nothing."""

from __future__ import annotations

import base64

import pytest
from webshepherd.daemon.engine.engine import Engine
from webshepherd.daemon.sessions.checklists import NO_CHECKLIST

from tests.fixtures.daemon import (
    CANDS,
    OBS,
    engine_like,
    score_without_approval,
    start_session,
)


async def test_full_session_seen_by_a_subscriber(daemon):
    monitor = await daemon.client(role="monitor", name="tui")
    assert (await monitor.request({"type": "subscribe", "sessions": "*"}))["type"] == "subscribed"
    agent = await daemon.client()
    sid = await start_session(agent)
    checklist = await agent.wait_for("checklist")
    assert checklist["source"] == "reference" and [i["index"] for i in checklist["items"]] == [1, 2]
    png = base64.b64encode(b"\x89PNG fake").decode()
    obs = await agent.request(
        {
            "type": "observe",
            "session_id": sid,
            "url": "http://shop.local/s",
            "axtree": OBS["axtree"],
            "screenshot": {"mime": "image/png", "data": png},
        }
    )
    assert (obs["type"], obs["step"]) == ("observed", 1)
    scored = await score_without_approval(agent, sid)
    assert scored["type"] == "scored" and scored["step"] == 1 and len(scored["results"]) == 2
    for r in scored["results"]:
        assert len(r["samples"]) == 2 and (r["reward"] is None or 0 <= r["reward"] <= 1)
        assert r["reward"] is not None or r["feedback"]  # never a silent 0
    assert scored["decision"]["status"] == "auto"
    assert scored["timing"]["model_ms"] > 0
    act = await agent.request(
        {"type": "action", "session_id": sid, "action": "click('2')", "thought": "t"}
    )
    assert (act["type"], act["step"]) == ("action.recorded", 1)
    end = await agent.request(
        {"type": "session.end", "session_id": sid, "outcome": "success", "answer": "$4.99"}
    )
    assert end["type"] == "session.ended"

    seen: list[dict] = []
    while not seen or seen[-1]["type"] != "session.ended":
        m = await monitor.wait_for(lambda m: m["type"] not in ("stats", "score.progress"))
        seen.append(m)
    assert [m["type"] for m in seen] == [
        "session.started",
        "observed",
        "checklist",
        "observed",
        "scored",
        "action",
        "session.ended",
    ]
    assert all("id" not in m or m["id"] is None for m in seen)
    assert seen[3]["screenshot"] == {"mime": "image/png", "data": None}  # no image data in events
    assert seen[4]["candidates"][1]["action"] == "click('2')"
    # stats frames sent before the step was counted may still be queued: take one after it
    stats = await monitor.wait_for(
        lambda m: m["type"] == "stats" and (m.get("judge") or {}).get("steps", 0) >= 1,
        timeout=10,
    )
    assert stats["queue_depth"] >= 0 and stats["tokens_per_s"] >= 0 and stats["connections"] >= 2
    judge = stats["judge"]  # tokens in and out per scored step; no price given: no cost
    assert judge["steps"] == 1 and judge["prompt_tokens_per_step"] > 0
    assert judge["completion_tokens"] > 0 and judge["cost_usd"] is None

    gone = await agent.request({"type": "observe", "session_id": sid, "url": "u", "axtree": "a"})
    assert (gone["type"], gone["code"]) == ("error", "session_closed")
    listed = await monitor.request({"type": "sessions.list"})
    assert listed["type"] == "sessions" and listed["sessions"][0]["state"] == "ended"
    history = await monitor.request({"type": "session.get", "session_id": sid})
    assert history["type"] == "session" and history["session"]["outcome"] == "success"
    assert [e["type"] for e in history["events"]] == [m["type"] for m in seen]
    assert history["checklist"]["text"] == checklist["text"]


async def test_score_progress_streams_to_the_requester(daemon):
    agent = await daemon.client()
    sid = await start_session(agent)
    scored = await agent.request(
        {
            "type": "score",
            "id": "c9",
            "session_id": sid,
            "candidates": CANDS[:1],
            "approval": "never",
        },
        timeout=60,
    )
    assert scored["type"] == "scored"
    progress = [m for m in agent.inbox if m["type"] == "score.progress"]
    assert progress and all(m["request"] == "c9" and m["session_id"] == sid for m in progress)
    assert "".join(m["delta"] for m in progress) == scored["results"][0]["samples"][0]["text"]


async def test_generated_checklist_or_a_model_error_for_the_owner(daemon):
    """Without a reference the model writes the checklist (once); a checklist the tiny model's
    output cannot be parsed into reaches the owner as a model_error, never an empty list, and
    a step scored without it has no reward and says why."""
    agent = await daemon.client()
    reply = await agent.request(
        {"type": "session.start", "intent": "Buy a cable", "observation": OBS}
    )
    msg = await agent.wait_for(lambda m: m["type"] in ("checklist", "error"), timeout=60)
    if msg["type"] == "checklist":
        assert (
            msg["source"] == "generated"
            and msg["items"]
            and msg["session_id"] == reply["session_id"]
        )
    else:
        assert msg["code"] == "model_error" and "Traceback" not in msg["message"]
        score = await agent.request(
            {
                "type": "score",
                "session_id": reply["session_id"],
                "candidates": CANDS,
                "approval": "never",
            }
        )
        # a step scored without one is a result: no reward, the reason (issue 44.2)
        assert score["type"] == "scored", score
        assert all(r["reward"] is None for r in score["results"])
        assert all(r["feedback"].startswith(NO_CHECKLIST) for r in score["results"])


@pytest.mark.parametrize(
    ("frame", "rid", "code", "text"),
    [
        ("{not json", None, "invalid_message", "malformed JSON"),
        ('["a list"]', None, "invalid_message", "JSON object"),
        (
            '{"type": "teleport", "id": "q1"}',
            "q1",
            "invalid_message",
            "unknown message type 'teleport'",
        ),
        ('{"type": "score", "id": "q2", "session_id": "s"}', "q2", "invalid_message", "candidates"),
        (
            '{"type": "score", "id": "q3", "session_id": "s", "candidates": []}',
            "q3",
            "invalid_message",
            "at least 1 item",
        ),
        (
            '{"type": "observe", "id": "q4", "session_id": "nope", "url": "u", "axtree": "a"}',
            "q4",
            "unknown_session",
            "nope",
        ),
        (
            '{"type": "session.get", "id": "q5", "session_id": "nope"}',
            "q5",
            "unknown_session",
            "nope",
        ),
        (
            '{"type": "approval.decide", "id": "q6", "request_id": "zz", "decision": "approve"}',
            "q6",
            "unauthorized",  # an agent's connection; a monitor's gets "no open approval request"
            "may not decide",
        ),
        (
            '{"type": "approval.decide", "id": "q7", "request_id": "zz", "decision": "edit"}',
            "q7",
            "invalid_message",
            "edited action",
        ),
        (
            '{"type": "hello", "id": "q8", "protocol": 1, "token": "t", "client": {"name": "x"}}',
            "q8",
            "invalid_message",
            "already authenticated",
        ),
    ],
)
async def test_bad_input_gets_its_error_and_the_connection_stays_open(
    daemon, frame, rid, code, text
):
    c = await daemon.client()
    await c.send(frame)
    err = await c.recv()
    assert (err["type"], err.get("id"), err["code"]) == ("error", rid, code), err
    assert text in err["message"] and "Traceback" not in err["message"]
    assert (await c.request({"type": "ping"}))["type"] == "pong"


class FailingEngine(Engine):
    """The real engine whose scoring throws, as a broken model would."""

    def score(self, step, on_progress=None, cancel=None):
        raise RuntimeError("CUDA error: device-side assert at /secret/path/kernel.cu:42")


async def test_a_model_that_throws_fails_that_request_only(start_daemon, daemon_engine):
    daemon = await start_daemon(engine=engine_like(FailingEngine, daemon_engine))
    agent = await daemon.client()
    sid = await start_session(agent)
    err = await agent.request({"type": "score", "session_id": sid, "candidates": CANDS})
    assert (err["type"], err["code"]) == ("error", "model_error")
    assert "/secret/path" not in err["message"] and "Traceback" not in err["message"]
    obs = await agent.request({"type": "observe", "session_id": sid, **OBS})
    assert obs["type"] == "observed"
    other = await daemon.client()
    assert (await other.request({"type": "ping"}))["type"] == "pong"
