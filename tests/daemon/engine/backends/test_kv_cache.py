"""The key-value cache goes into the model and comes back under the installed transformers'
own name, so transformers warns of no deprecated name (the warning ``demo`` and ``serve``
printed). The shipped tiny judge, a real Qwen2 checkpoint."""

from __future__ import annotations

import inspect
import logging
import warnings
from collections.abc import Iterator

import pytest
import torch
from webshepherd.daemon.dev.tiny_model import SHIPPED
from webshepherd.daemon.engine.backends.kv_cache import cache_kwargs, cache_name, cache_of


@pytest.fixture
def transformers_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """transformers' log records, its once-only warnings armed again."""
    from transformers.utils import logging as tlog

    tlog.get_logger("transformers").warning_once.cache_clear()
    tlog.enable_propagation()
    try:
        with caplog.at_level(logging.WARNING, logger="transformers"):
            yield caplog
    finally:
        tlog.disable_propagation()


def test_a_decode_step_passes_and_reads_the_cache_by_the_models_own_name(transformers_log):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(SHIPPED)
    assert cache_name(model) in inspect.signature(type(model).forward).parameters
    # the deprecated keyword raises a FutureWarning, the deprecated field a log record
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        first = model(input_ids=torch.tensor([[5, 6, 7]]), use_cache=True)
        cache = cache_of(first)
        assert cache.get_seq_length() == 3
        after = model(input_ids=torch.tensor([[8]]), use_cache=True, **cache_kwargs(model, cache))
        assert cache_of(after).get_seq_length() == 4
        # the same logits as the whole sequence at once: the cache was used, not dropped
        whole = model(input_ids=torch.tensor([[5, 6, 7, 8]])).logits[:, -1]
    torch.testing.assert_close(after.logits[:, -1], whole, atol=1e-4, rtol=1e-4)
    deprecated = [r for r in transformers_log.records if "past_key_values" in r.getMessage()]
    assert deprecated == []
