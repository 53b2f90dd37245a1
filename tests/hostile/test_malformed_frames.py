"""Frames that broke the parser (issue 14, item 1): each is answered ``invalid_message``;
before ``hello`` the connection closes cleanly with 1008, after it the connection stays
usable. Never a 1011, never a traceback in the log. Before ``hello`` frames are limited to
16 KiB (item 9), so there the deep frames are as deep as fits (7,000 levels); the
100,000-deep one is closed with 1009 before it is parsed."""

from __future__ import annotations

import pytest
from webshepherd.daemon.server.handshake import PREAUTH_FRAME_BYTES

from tests.fixtures.daemon import TEST_TOKEN
from tests.hostile.helpers import close_code, no_tracebacks, still_serving

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_IN_OBJECT = '{"type": "ping", "id": "d1", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
HUGE_INT_HELLO = (
    '{"type": "hello", "id": "h1", "protocol": '
    + "9" * 5000
    + f', "token": "{TEST_TOKEN}", "client": {{"name": "x", "version": "1", "role": "agent"}}}}'
)
LONE_SURROGATE_ID = '{"type": "ping", "id": "\\ud800"}'
LONE_SURROGATE_FIELD = '{"type": "ping", "id": "p1", "x": "a\\udc00b"}'
FRAMES = {
    "deep": DEEP,
    "deep_in_object": DEEP_IN_OBJECT,
    "huge_int": HUGE_INT_HELLO,
    "lone_surrogate_id": LONE_SURROGATE_ID,
    "lone_surrogate_field": LONE_SURROGATE_FIELD,
    "invalid_utf8_bytes": b'{"type": "ping", "id": "\xff"}',
}


PREAUTH_FRAMES = {
    **FRAMES,
    "deep": "[" * 7000 + "]" * 7000,
    "deep_in_object": '{"type": "ping", "id": "d1", "x": ' + "[" * 7000 + "]" * 7000 + "}",
}


@pytest.mark.parametrize("name", PREAUTH_FRAMES)
async def test_before_hello_invalid_message_then_clean_1008(daemon, caplog, name):
    assert len(PREAUTH_FRAMES[name]) <= PREAUTH_FRAME_BYTES
    c = await daemon.raw()
    await c.send(PREAUTH_FRAMES[name])
    err = await c.recv()
    assert (err["type"], err["code"]) == ("error", "invalid_message"), err
    assert "Traceback" not in err["message"]
    assert await close_code(c.ws) == 1008
    await still_serving(daemon)
    no_tracebacks(caplog)


@pytest.mark.parametrize("name", FRAMES)
async def test_after_hello_invalid_message_and_the_connection_stays(daemon, caplog, name):
    c = await daemon.client()
    await c.send(FRAMES[name])
    err = await c.recv()
    assert (err["type"], err["code"]) == ("error", "invalid_message"), err
    pong = await c.request({"type": "ping"})  # the same connection still works
    assert pong["type"] == "pong"
    no_tracebacks(caplog)


async def test_a_huge_integer_in_a_field_after_hello(daemon, caplog):
    c = await daemon.client()
    await c.send('{"type": "sessions.list", "id": "l1", "limit": ' + "7" * 5000 + "}")
    err = await c.recv()
    assert (err["type"], err["code"]) == ("error", "invalid_message")
    await c.send('{"type": "sessions.list", "id": "l2", "limit": ' + "7" * 300 + "}")
    err = await c.recv()  # fits the JSON parser, not the field
    assert (err["type"], err["id"], err["code"]) == ("error", "l2", "invalid_message")
    assert (await c.request({"type": "ping"}))["type"] == "pong"
    no_tracebacks(caplog)


async def test_before_hello_a_frame_over_the_small_limit_closes_1009(daemon, caplog):
    c = await daemon.raw()
    await c.send(DEEP)
    assert await close_code(c.ws) == 1009
    await still_serving(daemon)
    no_tracebacks(caplog)
