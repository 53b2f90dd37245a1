"""Streamed completion chunks folded into generations (plain dicts in, exact results out)."""

from __future__ import annotations

import math

import pytest
from webshepherd.daemon.engine.backends.base import YES
from webshepherd.daemon.engine.backends.openai_backend import StreamedChoices, usage_counts
from webshepherd.protocol.errors import ModelError


def chunk(index: int, text: str, tokens: list[str], finish: str | None = None) -> dict:
    tops = [{t: math.log(0.5), " No": math.log(0.25)} for t in tokens]
    return {
        "choices": [
            {
                "index": index,
                "text": text,
                "logprobs": {"tokens": tokens, "top_logprobs": tops},
                "finish_reason": finish,
            }
        ]
    }


def test_chunks_fold_into_generations_in_order() -> None:
    folded = StreamedChoices(2)
    assert folded.add(chunk(1, "<answer>", ["<answer>"])) == [(1, "<answer>")]
    assert folded.add(chunk(0, "Hi", ["Hi"])) == [(0, "Hi")]
    assert folded.add(chunk(1, " Yes", [" Yes"], "stop")) == [(1, " Yes")]
    assert folded.add({"choices": [], "usage": {"prompt_tokens": 3}}) == []
    assert folded.usage == {"prompt_tokens": 3}
    first, second = folded.generations()
    assert (first.text, first.finish_reason) == ("Hi", "length")
    assert (second.text, second.finish_reason) == ("<answer> Yes", "stop")
    assert [t.piece for t in second.tokens] == ["<answer>", " Yes"]
    assert second.tokens[1].group == YES
    assert second.tokens[1].mass == pytest.approx((0.5, 0.0, 0.25))


def test_unfinished_choices_read_aborted_after_a_cancel() -> None:
    folded = StreamedChoices(2)
    folded.add(chunk(0, "a", ["a"], "stop"))
    folded.add(chunk(1, "b", ["b"]))
    assert [g.finish_reason for g in folded.generations(aborted=True)] == ["stop", "aborted"]


def test_bad_chunks_are_model_errors() -> None:
    with pytest.raises(ModelError, match="mid-stream: boom"):
        StreamedChoices(1).add({"error": {"message": "boom"}})
    with pytest.raises(ModelError, match="choice 3 of 2"):
        StreamedChoices(2).add(chunk(3, "x", ["x"]))


def test_usage_counts_read_the_servers_prefix_cache_when_it_reports_it() -> None:
    usage = {"prompt_tokens": 5000, "completion_tokens": 900}
    assert usage_counts(usage, 880) == (5000, 900, False)
    cached = {**usage, "prompt_tokens_details": {"cached_tokens": 3968}}
    assert usage_counts(cached, 880) == (1032, 900, True)
    assert usage_counts({"prompt_tokens_details": None}, 7) == (0, 7, False)
