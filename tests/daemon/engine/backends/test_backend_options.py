"""The transformers backend's benchmark options: ``share_prefix=False`` and ``ignore_stop``."""

from __future__ import annotations

import pytest
from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend
from webshepherd.daemon.engine.engine import Engine

from tests.daemon.engine.backends.test_transformers_backend import _alone, _assert_same, _batch

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def base(tiny_engine: Engine) -> TransformersBackend:
    assert isinstance(tiny_engine.backend, TransformersBackend)
    return tiny_engine.backend


def test_no_sharing_prefills_every_prompt_whole_with_the_same_results(
    base: TransformersBackend,
) -> None:
    plain = TransformersBackend(base.model, base.tokenizer, base.model_id, share_prefix=False)
    batch = _batch(plain)
    out = plain.judge(batch)
    assert not out.prefix_shared
    assert out.prefilled_tokens == sum(plain.count_tokens(batch.prefix + s) for s in batch.suffixes)
    _assert_same(out, _alone(base, batch))
    assert base.judge(batch).prefix_shared  # the shared model's default is untouched


def test_ignore_stop_generates_exactly_max_new_tokens(base: TransformersBackend) -> None:
    fixed = TransformersBackend(base.model, base.tokenizer, base.model_id, ignore_stop=True)
    batch = _batch(fixed, samples=2, max_new=40)
    normal = base.judge(_batch(base, samples=1, max_new=400))
    assert any(g[0].finish_reason == "stop" for g in normal.generations)  # it does stop alone
    out = fixed.judge(batch)
    for gens in out.generations:
        for g in gens:
            assert g.finish_reason == "length"
            assert len(g.tokens) == 40
    assert out.generated_tokens == 3 * 2 * 40
