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
from typing import TYPE_CHECKING

import torch
from webshepherd.daemon.engine.backends.kv_cache import cache_kwargs, cache_of
from webshepherd.daemon.engine.sampling import NO_SAMPLING, Sampling

if TYPE_CHECKING:
    from transformers import Cache


@dataclass
class Rows:
    """The rows still decoding: the model's cache, their last logits, the attention mask over
    the cache, each row's next position, and the caller's row index at each batch position."""

    cache: Cache
    logits: torch.Tensor
    mask: torch.Tensor
    next_pos: torch.Tensor
    active: list[int]


#: ``(rows, chosen)`` -> ``(cache, logits)``: one forward step of the chosen tokens.
Forward = Callable[[Rows, torch.Tensor], tuple["Cache", torch.Tensor]]
#: ``(rows, chosen ids, step)`` -> the batch positions that go on decoding.
Take = Callable[[Rows, list[int], int], list[int]]


def model_forward(
    model: torch.nn.Module,
    mask: Callable[[torch.Tensor], torch.Tensor] | None = None,
    before: Callable[[Rows], None] | None = None,
    **extra: object,
) -> Forward:
    """The one forward step of every caller: the chosen tokens at each row's next position,
    over the rows' cache. ``mask`` reshapes the attention mask (split attention's 4-D one),
    ``before`` runs first (split attention sets its rows), ``extra``: more model keywords."""

    def forward(rows: Rows, chosen: torch.Tensor) -> tuple[Cache, torch.Tensor]:
        if before is not None:
            before(rows)
        out = model(
            input_ids=chosen[:, None],
            attention_mask=rows.mask if mask is None else mask(rows.mask),
            position_ids=rows.next_pos[:, None],
            **cache_kwargs(model, rows.cache),
            use_cache=True,
            **extra,
        )
        return cache_of(out), out.logits[:, -1, :].float()

    return forward


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


def penalize(logits: torch.Tensor, seen: torch.Tensor, penalty: float) -> torch.Tensor:
    """The repetition penalty (transformers' and vLLM's rule): each row's logits of tokens it
    has seen (``seen``: a ``(rows, vocab)`` mask of prompt and output tokens) divided by
    ``penalty`` when positive, multiplied when negative."""
    hit = seen[:, : logits.shape[-1]]
    scaled = torch.where(logits > 0, logits / penalty, logits * penalty)
    return torch.where(hit, scaled, logits)


def truncate(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """``top_k`` then ``top_p`` (the order of transformers' warpers and vLLM's sampler): the
    tokens outside set to -inf; the most likely token always stays."""
    if sampling.top_k is not None and 0 < sampling.top_k < logits.shape[-1]:
        kth = torch.topk(logits, sampling.top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if sampling.top_p is not None and sampling.top_p < 1.0:
        ordered, order = torch.sort(logits, dim=-1, descending=True)
        probs = torch.softmax(ordered, dim=-1)
        before = torch.cumsum(probs, dim=-1) - probs  # mass of the tokens ranked above
        drop = before >= sampling.top_p
        drop[..., 0] = False
        logits = logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
    return logits


def pick_tokens(
    logits: torch.Tensor,
    temperature: float | torch.Tensor,
    sampling: Sampling = NO_SAMPLING,
    seen: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The next token of each row: the repetition penalty (with ``seen``), then greedy at
    ``temperature <= 0``, else sampled at that temperature (a float, or one per row) from
    the distribution ``sampling`` truncates, drawing from ``generator`` when given. Greedy
    rows ignore ``top_k`` / ``top_p``."""
    if seen is not None and sampling.penalizes:
        assert sampling.repetition_penalty is not None
        logits = penalize(logits, seen, sampling.repetition_penalty)
    if isinstance(temperature, float | int):
        if temperature <= 0:
            return logits.argmax(-1)
        temps = torch.full((logits.shape[0], 1), float(temperature), device=logits.device)
    else:
        temps = temperature.reshape(-1, 1).clamp_min(1e-5)
    scaled = truncate(logits / temps, sampling)
    return torch.multinomial(torch.softmax(scaled, -1), 1, generator=generator).squeeze(-1)


def seen_mask(rows: list[list[int]], vocab: int, device: torch.device) -> torch.Tensor:
    """A ``(rows, vocab)`` mask of the token ids each row holds (its prompt, for the
    repetition penalty; :func:`mark_seen` adds the output as it comes)."""
    mask = torch.zeros((len(rows), vocab), dtype=torch.bool, device=device)
    for r, ids in enumerate(rows):
        inside = [i for i in ids if 0 <= i < vocab]
        if inside:
            mask[r, torch.tensor(inside, device=device)] = True
    return mask
