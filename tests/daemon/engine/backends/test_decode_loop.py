"""The sampling rule against transformers' own logits processors (the reference arithmetic)."""

from __future__ import annotations

import pytest
import torch
from transformers import (
    RepetitionPenaltyLogitsProcessor,
    TopKLogitsWarper,
    TopPLogitsWarper,
)
from webshepherd.daemon.engine.backends.decode_loop import (
    penalize,
    pick_tokens,
    seen_mask,
    truncate,
)
from webshepherd.daemon.engine.sampling import Sampling


def _logits() -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return torch.randn((4, 50), generator=g) * 3


@pytest.mark.parametrize("top_k", [1, 5, 49])
def test_top_k_keeps_what_transformers_keeps(top_k: int) -> None:
    x = _logits()
    ref = TopKLogitsWarper(top_k)(torch.zeros((4, 1), dtype=torch.long), x.clone())
    assert torch.equal(torch.isinf(truncate(x, Sampling(top_k=top_k))), torch.isinf(ref))


@pytest.mark.parametrize("top_p", [0.05, 0.5, 0.8, 0.95])
def test_top_p_keeps_what_transformers_keeps(top_p: float) -> None:
    x = _logits()
    ref = TopPLogitsWarper(top_p)(torch.zeros((4, 1), dtype=torch.long), x.clone())
    got = truncate(x, Sampling(top_p=top_p))
    assert torch.equal(torch.isinf(got), torch.isinf(ref))
    assert torch.equal(got.argmax(-1), x.argmax(-1))  # the most likely token always stays


def test_repetition_penalty_is_transformers_rule_on_prompt_and_output_tokens() -> None:
    x = _logits()
    ids = [[1, 2, 3], [4], [], [7, 7, 49]]
    width = max(len(r) for r in ids)
    padded = torch.tensor([r + [r[0] if r else 0] * (width - len(r)) for r in ids])
    ref = RepetitionPenaltyLogitsProcessor(1.3)(padded, x.clone())
    ref[2] = x[2]  # the empty row saw nothing (the padding above put token 0 in it)
    assert torch.allclose(penalize(x, seen_mask(ids, 50, x.device), 1.3), ref)


def test_greedy_with_and_without_settings_and_sampling_within_top_k() -> None:
    x = _logits()
    assert torch.equal(pick_tokens(x, 0.0, Sampling(top_k=3, top_p=0.1)), x.argmax(-1))
    torch.manual_seed(0)
    for _ in range(20):
        got = pick_tokens(x, 2.0, Sampling(top_k=2))
        top2 = torch.topk(x, 2).indices
        assert all(int(got[r]) in top2[r].tolist() for r in range(4))
    per_row = pick_tokens(x, torch.tensor([1.0, 1.0, 1.0, 1.0]), Sampling(top_k=1))
    assert torch.equal(per_row, x.argmax(-1))
