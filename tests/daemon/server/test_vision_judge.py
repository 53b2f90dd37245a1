"""A daemon judging with the tiny vision checkpoint through transformers, over real sockets: the
observation's screenshot goes into the judge prompt, an observation without one is text."""

from __future__ import annotations

import base64

import pytest
from webshepherd.daemon.dev.screenshots import axtree_png
from webshepherd.daemon.engine.engine import Engine

from tests.fixtures.daemon import OBS, score_without_approval, start_session

pytestmark = pytest.mark.model


async def test_screenshots_are_judged_through_transformers(
    start_daemon, tiny_vision_engine: Engine
) -> None:
    daemon = await start_daemon(engine=tiny_vision_engine)
    agent = await daemon.client()
    sid = await start_session(agent)
    png = base64.b64encode(axtree_png(OBS["axtree"])).decode()
    observed = await agent.request(
        {
            "type": "observe",
            "session_id": sid,
            "url": OBS["url"],
            "axtree": OBS["axtree"],
            "screenshot": {"mime": "image/png", "data": png},
        }
    )
    assert observed["type"] == "observed", observed
    scored = await score_without_approval(agent, sid)
    assert scored["type"] == "scored", scored
    assert [r["judge_inputs"] for r in scored["results"]] == ["text+image"] * 2
    assert all(r["probabilities"] == "full" for r in scored["results"])
    for r in scored["results"]:
        assert len(r["samples"]) == 2 and r["samples"][0]["text"]
        assert r["reward"] is not None or r["feedback"]
    # the next observation has no screenshot: judged as text, and the reply says so
    observed = await agent.request(
        {"type": "observe", "session_id": sid, "url": OBS["url"], "axtree": OBS["axtree"]}
    )
    assert observed["type"] == "observed", observed
    text = await score_without_approval(agent, sid, samples=1)
    assert text["type"] == "scored", text
    assert [r["judge_inputs"] for r in text["results"]] == ["text"] * 2


async def test_a_screenshot_that_is_no_image_is_a_clear_model_error(
    start_daemon, tiny_vision_engine: Engine
) -> None:
    daemon = await start_daemon(engine=tiny_vision_engine)
    agent = await daemon.client()
    sid = await start_session(agent)
    await agent.request(
        {
            "type": "observe",
            "session_id": sid,
            "url": OBS["url"],
            "axtree": OBS["axtree"],
            "screenshot": {"mime": "image/png", "data": base64.b64encode(b"not a png").decode()},
        }
    )
    reply = await score_without_approval(agent, sid, samples=1)
    assert (reply["type"], reply["code"]) == ("error", "model_error"), reply
    assert "screenshot" in reply["message"]
