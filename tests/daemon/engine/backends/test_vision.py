"""A decompression bomb as a screenshot: a small PNG that declares 12000x12000 pixels, sent over
real sockets to a daemon judging with the tiny vision checkpoint, is refused from its header
with a clear error; the observation stays recorded and the daemon goes on judging (the tests
are about the refusal, not about what the model writes)."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

import pytest
import torch
from webshepherd.daemon.dev.screenshots import axtree_png
from webshepherd.daemon.engine.backends.vision import MAX_DECODED_PIXELS, image_token_count
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


# -- image tokens for the screenshot's real size ---------------------------------------------

# A stock Qwen2.5-VL preprocessor_config.json (Qwen/Qwen2.5-VL-3B-Instruct).
STOCK = {"min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "merge_size": 2}


def _stock_processor() -> Any:
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    return Qwen2VLImageProcessorPil(
        size={"shortest_edge": STOCK["min_pixels"], "longest_edge": STOCK["max_pixels"]},
        patch_size=STOCK["patch_size"],
        merge_size=STOCK["merge_size"],
        temporal_patch_size=2,
    )


@pytest.mark.parametrize(
    ("width", "height"), [(1280, 720), (1920, 1080), (390, 844), (30, 20), (5000, 4000)]
)
def test_image_tokens_are_the_stock_processors_arithmetic(width: int, height: int) -> None:
    """The count from the size alone equals what transformers' Qwen2-VL processor makes of a
    real image of that size (``image_grid_thw.prod() // merge**2``); 1280x720 is 1196."""
    from PIL import Image as PILImage

    out = _stock_processor()(images=[PILImage.new("RGB", (width, height))], return_tensors="pt")
    expected = int(out["image_grid_thw"][0].prod()) // STOCK["merge_size"] ** 2
    got = image_token_count(
        height,
        width,
        patch=STOCK["patch_size"],
        merge=STOCK["merge_size"],
        min_pixels=STOCK["min_pixels"],
        max_pixels=STOCK["max_pixels"],
    )
    assert got == expected
    if (width, height) == (1280, 720):
        assert got == 1196


def test_a_1280x720_screenshot_fits_a_10k_context_with_a_realistic_ax_tree(
    tiny_vision_model_path: object,
) -> None:
    """With a stock Qwen2.5-VL processor the budget counts a 1280x720 screenshot as its 1196
    tokens, not the processor's maximum (16,386, more than the whole context): a step with
    a shop page's AX tree fits whole, and the count is the prompt's real length."""
    from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend
    from webshepherd.daemon.engine.backends.vision import VisionInputs, place_image
    from webshepherd.daemon.engine.engine import Engine, EngineConfig
    from webshepherd.daemon.engine.types import StepInput
    from webshepherd.protocol.common import Turn

    from tests.fixtures.data import AXTREE_GOLDEN

    backend = TransformersBackend.load(str(tiny_vision_model_path), device="cpu")
    assert backend.vision is not None
    backend.vision = VisionInputs(_stock_processor(), backend.model.config)
    assert backend.vision.max_tokens == 16386  # what the budget used to count
    # the tiny checkpoint's own context is 2048: give it the authors' 10k (batches are only
    # built here, nothing runs through the model)
    backend.model.config.get_text_config().max_position_embeddings = 10_000
    engine = Engine(backend, EngineConfig(max_context=10_000, judge_inputs="text+image"))
    tree = (AXTREE_GOLDEN / "p2-shop.default.txt").read_text("utf-8")
    shot = axtree_png(tree, 1280, 720)
    step = StepInput(
        intent="Buy the red running shoes in size 9",
        current_url="http://shop.local/",
        axtree=tree,
        checklist=engine.parse_reference_checklist("Checklist 1: Search\nChecklist 2: Buy"),
        history=(Turn("Open the shop.", "goto('http://shop.local/')"),),
        candidates=(Turn("Search.", "fill('12', 'red shoes')"), Turn("Scroll.", "scroll(0, 300)")),
        screenshot=shot,
        screenshot_mime="image/png",
    )
    try:
        batch = engine._judge_batch(step)
        assert "AXTree truncated" not in batch.prefix and batch.image is not None
        image = backend.vision.image(batch.image, torch.float32)
        assert image.tokens == 1196
        for suffix in batch.suffixes:
            counted = backend.count_prompt(batch.prefix + suffix, batch.image)
            placed, _ = place_image(batch.prefix + suffix, image.markup)
            assert counted == len(backend._encode(placed)) < 10_000 - 512
    finally:
        backend.close()
