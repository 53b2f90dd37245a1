"""The repeated-prefix layout: the shared prefix prefilled once and its KV cache repeated for
every row, the suffixes left-padded behind it, then the one decode loop (decode_loop.py). The
older layout, and the fallback when a model's attention cannot be split (decode_split.py)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import torch
from webshepherd.daemon.engine.backends.base import DeltaCallback
from webshepherd.daemon.engine.backends.decode_loop import Rows, decode, model_forward, pick_tokens
from webshepherd.daemon.engine.backends.decode_rows import Decoded, Row, RowWriter
from webshepherd.daemon.engine.backends.kv_cache import cache_kwargs, cache_of

__all__ = ["decode_copies"]


def decode_copies(
    model: torch.nn.Module,
    writer: RowWriter,
    pad: int,
    prefix: list[int],
    suffixes: list[list[int]],
    n: int,
    max_new: int,
    temperature: float,
    greedy: bool,
    stop: Sequence[str],
    on_delta: DeltaCallback | None,
    cancel: threading.Event | None,
) -> Decoded:
    """``n`` samples of each suffix after ``prefix`` (padded with ``pad``), at most
    ``max_new`` tokens each, greedy or at ``temperature``, streamed to ``on_delta``."""
    dev, k, p = writer.device, len(suffixes), len(prefix)
    cache = None
    if p:
        cache = cache_of(model(input_ids=torch.tensor([prefix], device=dev), use_cache=True))
        if k > 1:
            cache.batch_repeat_interleave(k)
    width = max(len(s) for s in suffixes)
    ids = torch.full((k, width), pad, dtype=torch.long, device=dev)
    mask = torch.zeros((k, p + width), dtype=torch.long, device=dev)
    mask[:, :p] = 1
    pos = torch.full((k, width), p, dtype=torch.long, device=dev)
    for i, s in enumerate(suffixes):
        ids[i, width - len(s) :] = torch.tensor(s, device=dev)
        mask[i, p + width - len(s) :] = 1
        pos[i, width - len(s) :] = torch.arange(p, p + len(s), device=dev)
    out = model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=pos,
        **cache_kwargs(model, cache),
        use_cache=True,
    )
    cache, logits = cache_of(out), out.logits[:, -1, :].float()
    next_pos = pos[:, -1] + 1
    if n > 1:
        cache.batch_repeat_interleave(n)
        logits, mask, next_pos = (t.repeat_interleave(n, dim=0) for t in (logits, mask, next_pos))
    rows = [Row() for _ in range(k * n)]
    stops = tuple(stop)
    seen = writer.seen([prefix + suffixes[r // n] for r in range(k * n)], logits.shape[-1])

    def pick(batch: Rows) -> torch.Tensor:
        mine = seen[batch.active] if seen is not None else None
        return pick_tokens(
            batch.logits,
            0.0 if greedy else max(temperature, 1e-5),
            writer.sampling,
            mine,
            writer.rng,
        )

    def take(batch: Rows, chosen: list[int], step: int) -> list[int]:
        if cancel is not None and cancel.is_set():
            for r in batch.active:
                rows[r].finish = "aborted"
            return []
        if seen is not None:
            seen[batch.active, chosen] = True
        mass = writer.group_mass(batch.logits)
        keep: list[int] = []
        for b, (r, tid) in enumerate(zip(batch.active, chosen, strict=True)):
            writer.append(rows[r], tid, mass[b], stops)
            if on_delta is not None:
                writer.emit(on_delta, r // n, r % n, rows[r])
            if rows[r].finish is None:
                keep.append(b)
        return keep

    batch = Rows(cache, logits, mask, next_pos, list(range(k * n)))
    for _ in decode(batch, pick, take, model_forward(model), max_new):
        pass
    for row in rows:
        if row.finish is None:
            row.finish = "length"
    return Decoded(rows=rows, prefilled=p + sum(len(s) for s in suffixes))
