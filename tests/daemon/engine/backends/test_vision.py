"""A decompression bomb as a screenshot: a small PNG that declares 12000x12000 pixels, sent over
real sockets to a daemon judging with the tiny vision checkpoint, is refused from its header
with a clear error; the observation stays recorded and the daemon goes on judging (the tests
are about the refusal, not about what the model writes)."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest
import torch
from webshepherd.daemon.dev.screenshots import axtree_png
from webshepherd.daemon.engine.backends.vision import MAX_DECODED_PIXELS
from webshepherd.daemon.engine.engine import Engine
from webshepherd.protocol.errors import ModelError

from tests.fixtures.daemon import OBS, score_without_approval, start_session

pytestmark = pytest.mark.model


def png_bomb(width: int, height: int) -> bytes:
    """A valid grayscale PNG of ``width`` x ``height`` black pixels, compressed row by row (a
    12000x12000 one is about 140 KiB and decodes to 144 million pixels)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    z = zlib.compressobj(9)
    rows = b"\x00" * (width + 1) * 100  # filter byte + one byte per pixel, 100 rows at a time
    idat = b"".join(z.compress(rows) for _ in range(height // 100)) + z.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    body = chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + body


async def observe(agent, sid: str, png: bytes) -> dict:
    return await agent.request(
        {
            "type": "observe",
            "session_id": sid,
            "url": OBS["url"],
            "axtree": OBS["axtree"],
            "screenshot": {"mime": "image/png", "data": base64.b64encode(png).decode()},
        }
    )


async def test_a_png_bomb_is_refused_from_its_header(start_daemon, tiny_vision_engine: Engine):
    daemon = await start_daemon(engine=tiny_vision_engine)
    agent = await daemon.client()
    other = await daemon.client(name="other")
    bomb = png_bomb(12000, 12000)
    assert len(bomb) < 512 * 1024
    sid = await start_session(agent)
    assert (await observe(agent, sid, bomb))["type"] == "observed"
    reply = await score_without_approval(agent, sid, samples=1)
    assert (reply["type"], reply["code"]) == ("error", "model_error"), reply
    assert "12000x12000" in reply["message"] and "smaller" in reply["message"]
    assert (await other.request({"type": "ping"}))["type"] == "pong"

    # the recording keeps the observation, screenshot included
    got = await other.request({"type": "session.get", "session_id": sid})
    observed = [e for e in got["events"] if e["type"] == "observed"]
    assert observed and observed[-1]["screenshot"]["mime"] == "image/png"

    # the same daemon judges an ordinary screenshot next, in another session and in this one
    sid2 = await start_session(other)
    assert (await observe(other, sid2, axtree_png(OBS["axtree"])))["type"] == "observed"
    scored = await score_without_approval(other, sid2, samples=1)
    assert scored["type"] == "scored", scored
    assert [r["judge_inputs"] for r in scored["results"]] == ["text+image"] * 2
    assert (await observe(agent, sid, axtree_png(OBS["axtree"])))["type"] == "observed"
    again = await score_without_approval(agent, sid, samples=1)
    assert again["type"] == "scored", again


@pytest.mark.parametrize("side", [6400, 20000])  # above the bound; far above PIL's own limit
def test_the_header_decides_before_any_decoding(tiny_vision_engine: Engine, side: int):
    vision = tiny_vision_engine.backend.vision  # type: ignore[attr-defined]
    assert vision.max_decoded_pixels == MAX_DECODED_PIXELS
    small = png_bomb(side, 100)  # its header then says side x side: the data is 100 rows
    lying = small[:16] + struct.pack(">II", side, side) + small[24:29]
    lying += struct.pack(">I", zlib.crc32(lying[12:29])) + small[33:]
    with pytest.raises(ModelError, match="declares") as caught:
        vision.image(("image/png", lying), torch.float32)
    assert "smaller" in caught.value.message
