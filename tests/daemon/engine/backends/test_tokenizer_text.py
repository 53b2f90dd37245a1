"""Streamed text on the tiny model's byte-level BPE: the deltas joined are the decoded text."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from transformers import AutoTokenizer
from webshepherd.daemon.engine.backends.base import JudgeBatch
from webshepherd.daemon.engine.backends.tokenizer_text import IncrementalText, encode_plain
from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend
from webshepherd.daemon.engine.engine import Engine

pytestmark = pytest.mark.model

# accents (2 bytes), CJK (3 bytes), an emoji (4 bytes): each split over byte tokens
TEXT = "héllo wörld 日本語 😀 ok\nTHOUGHT: ça coûte 5 €"


@pytest.fixture(scope="module")
def tokenizer(tiny_engine: Engine) -> Any:
    assert isinstance(tiny_engine.backend, TransformersBackend)
    return tiny_engine.backend.tokenizer


def _streamed(tokenizer: Any, ids: list[int]) -> tuple[list[str], str]:
    stream = IncrementalText(tokenizer)
    deltas = [stream.extend(ids[: i + 1]) for i in range(len(ids))]
    final = tokenizer.decode(ids, skip_special_tokens=True)
    return deltas, "".join(deltas) + stream.rest(final)


def test_split_characters_come_out_whole(tokenizer: Any) -> None:
    ids = encode_plain(tokenizer, TEXT)
    assert len(ids) > len(TEXT.encode()) // 2  # the characters really are split into bytes
    deltas, joined = _streamed(tokenizer, ids)
    assert joined == TEXT
    assert "" in deltas  # some tokens only started a character
    assert all("\ufffd" not in d for d in deltas)
    assert {"é", "日", "😀", "€"} <= {c for d in deltas for c in d}


def test_every_cut_and_special_tokens_match_decode(tokenizer: Any) -> None:
    ids = encode_plain(tokenizer, TEXT)
    eos = tokenizer.convert_tokens_to_ids(tokenizer.eos_token)
    ids = [*ids[:7], eos, *ids[7:]]
    for cut in range(1, len(ids) + 1):  # a row cut by length mid-character included
        _, joined = _streamed(tokenizer, ids[:cut])
        assert joined == tokenizer.decode(ids[:cut], skip_special_tokens=True)


def test_slow_path_gives_the_same_deltas(tokenizer: Any, tiny_model_path: Any) -> None:
    spaces = AutoTokenizer.from_pretrained(str(tiny_model_path), clean_up_tokenization_spaces=True)
    assert spaces.clean_up_tokenization_spaces
    ids = encode_plain(tokenizer, TEXT)
    fast, slow = _streamed(tokenizer, ids)[0], _streamed(spaces, ids)[0]
    assert "".join(slow) == spaces.decode(ids, skip_special_tokens=True)
    assert [bool(d) for d in fast] == [bool(d) for d in slow]


def test_backend_deltas_join_to_each_text(tiny_engine: Engine) -> None:
    """Hot sampling picks byte tokens that split characters, and rows cut by length in the
    middle of one; the streamed deltas still join to exactly each generation's text."""
    backend = tiny_engine.backend
    assert isinstance(backend, TransformersBackend)
    torch.manual_seed(0)
    cut_mid_character = 0
    for max_new in range(1, 9):
        seen: dict[tuple[int, int], str] = {}

        def on_delta(c: int, s: int, text: str, seen: dict[tuple[int, int], str] = seen) -> None:
            seen[(c, s)] = seen.get((c, s), "") + text

        batch = JudgeBatch(
            prefix="Reply: ",
            suffixes=["a", "日本"],
            samples=8,
            max_new_tokens=max_new,
            temperature=50.0,
        )
        out = backend.judge(batch, on_delta=on_delta)
        for c, gens in enumerate(out.generations):
            for s, g in enumerate(gens):
                assert seen.get((c, s), "") == g.text
                cut_mid_character += g.text.endswith("\ufffd")
    assert cut_mid_character  # the held-back bytes of a cut row were streamed too
