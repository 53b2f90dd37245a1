"""The transformers backend on the tiny vision model: the screenshot in the shared prefix is
exact against each candidate alone and against transformers' own M-RoPE generation."""

from __future__ import annotations

import pytest
import torch
from webshepherd.daemon.dev.screenshots import axtree_png
from webshepherd.daemon.engine.backends.base import JudgeBatch, JudgeOutput
from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend
from webshepherd.daemon.engine.backends.vision import IMAGE_PAD, place_image
from webshepherd.daemon.engine.engine import Engine
from webshepherd.daemon.engine.prompts import IMAGE_PLACEHOLDER, split_judge_prompt

from tests.daemon.engine.backends.test_transformers_backend import CANDIDATES, TREE, _alone

pytestmark = pytest.mark.model

SHOT = ("image/png", axtree_png(TREE))


@pytest.fixture(scope="module")
def backend(tiny_vision_engine: Engine) -> TransformersBackend:
    assert isinstance(tiny_vision_engine.backend, TransformersBackend)
    return tiny_vision_engine.backend


def _batch(backend: TransformersBackend, image: bool = True, samples: int = 1) -> JudgeBatch:
    prefix, suffixes = split_judge_prompt(
        backend.render_chat,
        intent="Buy red shoes",
        trajectory="",
        current_url="http://shop.example.com",
        text_observation=TREE,
        checklist="Checklist 1: Search\nChecklist 2: Buy",
        candidates=CANDIDATES,
        with_image=image,
    )
    return JudgeBatch(
        prefix=prefix,
        suffixes=suffixes,
        samples=samples,
        max_new_tokens=32,
        image=SHOT if image else None,
    )


def _pieces(out: JudgeOutput, k: int) -> list[str]:
    return [t.piece for t in out.generations[k][0].tokens]


def test_loads_with_its_image_processor(backend: TransformersBackend) -> None:
    assert backend.accepts_images and backend.vision is not None
    assert backend.split_attention
    assert type(backend.model).__name__ == "Qwen2_5_VLForConditionalGeneration"
    image = backend.vision.image(SHOT, torch.float32)
    grid = image.grid_thw[0].tolist()
    assert grid[0] == 1 and image.tokens == grid[1] * grid[2] // 4 > 4
    assert image.pixel_values.shape[0] == grid[0] * grid[1] * grid[2]


def test_screenshot_prefix_shared_matches_each_candidate_alone(
    backend: TransformersBackend,
) -> None:
    batch = _batch(backend)
    assert IMAGE_PLACEHOLDER in batch.prefix  # the image sits before the candidate
    together = backend.judge(batch)
    assert together.prefix_shared
    image = backend.vision.image(SHOT, torch.float32) if backend.vision else None
    assert image is not None
    fulls = [
        len(backend._encode(place_image(batch.prefix + s, image.markup)[0])) for s in batch.suffixes
    ]
    prefix_len = len(backend._encode(place_image(batch.prefix, image.markup)[0]))
    # the prefix with its image tokens is prefilled once, not three times
    assert sum(fulls) - 2 * prefix_len <= together.prefilled_tokens < sum(fulls) - prefix_len
    alone = _alone(backend, batch)
    assert not any(a.prefix_shared for a in alone)
    for k, single in enumerate(alone):
        assert _pieces(together, k) == _pieces(single, 0)
        for ta, tb in zip(
            together.generations[k][0].tokens, single.generations[0][0].tokens, strict=True
        ):
            assert ta.mass == pytest.approx(tb.mass, abs=1e-5)
            assert ta.group == tb.group
    assert together.generated_tokens > 0


def test_matches_transformers_own_generation(backend: TransformersBackend) -> None:
    """Greedy tokens equal ``generate`` with pixel values, whose positions the model computes
    itself (get_rope_index, rope_deltas): the continued M-RoPE positions are right."""
    batch = _batch(backend)
    together = backend.judge(batch)
    assert backend.vision is not None
    image = backend.vision.image(SHOT, torch.float32)
    for k, suffix in enumerate(batch.suffixes):
        text = place_image(batch.prefix + suffix, image.markup)[0]
        ids = torch.tensor([backend._encode(text)])
        assert (
            int((ids == backend.tokenizer.convert_tokens_to_ids(IMAGE_PAD)).sum()) == image.tokens
        )
        with torch.inference_mode():
            out = backend.model.generate(
                input_ids=ids,
                pixel_values=image.pixel_values,
                image_grid_thw=image.grid_thw,
                mm_token_type_ids=(ids == backend.vision.image_token_id).int(),
                max_new_tokens=batch.max_new_tokens,
                do_sample=False,
            )
        new = out[0, ids.shape[1] :].tolist()
        pieces = [backend._piece(t) for t in new if t not in backend._eos]
        assert _pieces(together, k) == pieces


def test_the_screenshot_reaches_the_model(backend: TransformersBackend) -> None:
    """Another screenshot changes the label probabilities; the text prompt is judged as text."""
    batch = _batch(backend)
    other = JudgeBatch(
        prefix=batch.prefix,
        suffixes=batch.suffixes,
        samples=1,
        max_new_tokens=batch.max_new_tokens,
        image=(
            "image/png",
            axtree_png("RootWebArea 'Maps'\n\t[7] link 'Directions'\n\t[8] link 'Home'"),
        ),
    )
    a, b = backend.judge(batch), backend.judge(other)
    first_a = a.generations[0][0].tokens[0].mass
    first_b = b.generations[0][0].tokens[0].mass
    # float noise is ~1e-7 relative; another picture moves the masses well beyond it
    assert first_a != pytest.approx(first_b, rel=1e-6, abs=0)
    text = backend.judge(_batch(backend, image=False))
    assert text.prefix_shared and text.generated_tokens > 0


def test_samples_with_a_screenshot(backend: TransformersBackend) -> None:
    out = backend.judge(_batch(backend, samples=2))
    assert len(out.generations) == 3 and all(len(g) == 2 for g in out.generations)


def _same(a: JudgeOutput, b: JudgeOutput) -> None:
    assert len(a.generations) == len(b.generations)
    for ga, gb in zip(a.generations, b.generations, strict=True):
        assert [t.piece for t in ga[0].tokens] == [t.piece for t in gb[0].tokens]
        for ta, tb in zip(ga[0].tokens, gb[0].tokens, strict=True):
            assert ta.mass == pytest.approx(tb.mass, abs=1e-5)


def test_sessions_decoded_together_keep_their_own_screenshots(
    backend: TransformersBackend,
) -> None:
    """``judge_many`` (several sessions' steps in one decode, each prefix with its own image,
    one without) gives each batch what it gets alone."""
    maps = ("image/png", axtree_png("RootWebArea 'Maps'\n\t[7] link 'Directions'"))
    first, text = _batch(backend), _batch(backend, image=False)
    second = JudgeBatch(
        prefix=first.prefix,
        suffixes=first.suffixes[:2],
        samples=1,
        max_new_tokens=first.max_new_tokens,
        image=maps,
    )
    together = backend.judge_many([first, text, second], [None] * 3, [None] * 3)
    for batch, out in zip([first, text, second], together, strict=True):
        assert isinstance(out, JudgeOutput)
        _same(out, backend.judge(batch))


def test_without_split_attention_a_screenshot_is_judged_unshared(
    backend: TransformersBackend,
) -> None:
    assert backend.vision is not None
    plain = TransformersBackend(
        backend.model,
        backend.tokenizer,
        backend.model_id,
        split_attention=False,
        vision=backend.vision,
    )
    batch = _batch(backend)
    out = plain.judge(batch)
    assert not out.prefix_shared
    _same(out, backend.judge(batch))


def test_checklists_are_written_by_the_vision_model(backend: TransformersBackend) -> None:
    prompt = backend.render_chat([{"role": "user", "content": "Checklist 1:"}])
    assert isinstance(backend.generate(prompt, 8), str)
    # a context budget counts the screenshot as at least the image tokens it really takes
    batch = _batch(backend)
    assert backend.vision is not None
    full = batch.prefix + batch.suffixes[0]
    image = backend.vision.image(SHOT, torch.float32)
    real = len(backend._encode(place_image(full, image.markup)[0]))
    assert real <= backend.count_tokens(full) <= real + backend.vision.max_tokens
