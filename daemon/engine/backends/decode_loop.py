"""The one token-by-token decode loop on a transformers model, shared by the backend's
layouts (split attention, repeated prefix cache) and the dev endpoint's completions.

Every row of a batch starts from a prefilled cache and its last logits. Each iteration picks
a token per active row, lets the caller take them (append, stream, decide which rows go on),
drops the finished rows from the cache, extends the attention mask and runs one forward step
at each row's next position. What differs between the callers (sampling rule, label masses,
top-k logprobs, the forward's keyword arguments) comes in as callables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class Rows:
    """The rows still decoding: the model's cache, their last logits, the attention mask over
    the cache, each row's next position, and the caller's row index at each batch position."""

    cache: Any
    logits: torch.Tensor
    mask: torch.Tensor
    next_pos: torch.Tensor
    active: list[int]


#: ``(rows, chosen)`` -> ``(cache, logits)``: one forward step of the chosen tokens.
Forward = Callable[[Rows, torch.Tensor], tuple[Any, torch.Tensor]]
#: ``(rows, chosen ids, step)`` -> the batch positions that go on decoding.
Take = Callable[[Rows, list[int], int], list[int]]


def decode(
    rows: Rows,
    pick: Callable[[Rows], torch.Tensor],
    take: Take,
    forward: Forward,
    max_new: int | None = None,
) -> Iterator[Rows]:
    """Decode until no row goes on (or ``max_new`` tokens); yields after each token is taken
    while some row goes on, before the finished ones leave the batch."""
    step = 0
    while rows.active and (max_new is None or step < max_new):
        chosen = pick(rows)
        keep = take(rows, chosen.tolist(), step)
        step += 1
        if not keep:
            rows.active = []
            return
        yield rows
        if len(keep) < len(rows.active):
            sel = torch.tensor(keep, device=chosen.device)
            rows.cache.batch_select_indices(sel)
            chosen, rows.mask, rows.next_pos = chosen[sel], rows.mask[sel], rows.next_pos[sel]
            rows.active = [rows.active[i] for i in keep]
        one = torch.ones((len(rows.active), 1), dtype=rows.mask.dtype, device=rows.mask.device)
        rows.mask = torch.cat([rows.mask, one], dim=1)
        rows.cache, rows.logits = forward(rows, chosen)
        rows.next_pos = rows.next_pos + 1


def pick_tokens(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Greedy at ``temperature <= 0``, else sampled from the softmax at that temperature."""
    if temperature <= 0:
        return logits.argmax(-1)
    return torch.multinomial(torch.softmax(logits / temperature, -1), 1).squeeze(-1)
