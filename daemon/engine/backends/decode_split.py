"""The split-attention layout: every judge batch's shared prefix prefilled and kept once
(split_attention.py routes each row's attention to its group's single prefix copy and its own
cache), all batches' rows decoded together in the one decode loop (decode_loop.py); a
screenshot's image tokens inside a prefix are embedded with the vision tower's output."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from webshepherd.daemon.engine.backends import split_attention as split
from webshepherd.daemon.engine.backends.decode_loop import Rows, decode, model_forward, pick_tokens
from webshepherd.daemon.engine.backends.decode_rows import Decoded, Part, Row, RowWriter
from webshepherd.daemon.engine.backends.kv_cache import cache_of
from webshepherd.daemon.engine.backends.vision import Image

__all__ = ["Embed", "decode_split"]

#: ``(ids, images)`` -> the model's input keywords: ids, or embeddings with the images placed.
Embed = Callable[[torch.Tensor, list[Image]], dict[str, Any]]


class _SplitRows:
    """The rows of a split decode (each candidate's samples, a part's rows contiguous) and
    which part each belongs to."""

    def __init__(self, parts: list[Part], part_of: list[int]):
        self.parts, self.part_of = parts, part_of
        self.rows = [Row() for _ in part_of]
        self.first_row = [0] * len(parts)
        for b in range(len(part_of) - 1, -1, -1):
            self.first_row[part_of[b]] = b
        self.per_part: list[list[Row]] = [[] for _ in parts]
        for b, row in enumerate(self.rows):
            self.per_part[part_of[b]].append(row)

    def part(self, b: int) -> Part:
        return self.parts[self.part_of[b]]

    def where(self, b: int) -> tuple[int, int]:
        """Row ``b`` as (candidate, sample) within its part."""
        i = b - self.first_row[self.part_of[b]]
        n = self.part(b).n
        return i // n, i % n

    def abort_cancelled(self, active: list[int]) -> None:
        """Mark the active rows of every part whose ``cancel`` is set as aborted."""
        cancelled = {
            pi
            for pi, part in enumerate(self.parts)
            if part.cancel is not None and part.cancel.is_set()
        }
        for b in active:
            if self.part_of[b] in cancelled:
                self.rows[b].finish = "aborted"


def decode_split(
    model: Any,
    writer: RowWriter,
    pad: int,
    parts: list[Part],
    embed: Embed,
    image_token_id: int | None,
) -> list[Decoded]:
    """All rows of all ``parts`` in one decode; each prefix prefilled and kept once.
    ``image_token_id``: the vision model's image token (None: text only)."""
    dev = writer.device

    def has_image(ids: list[int]) -> bool:
        return image_token_id is not None and image_token_id in ids

    shared, group_of = _prefill_prefixes(model, dev, parts, embed, has_image)
    # one row per candidate: left-padded suffixes, positions continuing each prefix
    owner = [pi for pi, part in enumerate(parts) for _ in part.suffixes]
    ids, valid, pos, mask = _suffix_batch(dev, pad, parts, owner)
    extra = {split.KWARG: shared} if shared.keys else {}
    images = [
        part.image
        for part in parts
        for suf in part.suffixes
        if part.image is not None and has_image(suf)
    ]
    out = model(
        **embed(ids, images),
        attention_mask=mask[:, None],
        position_ids=pos,
        use_cache=True,
        logits_to_keep=1,
        **extra,
    )
    cache, logits = cache_of(out), out.logits[:, -1, :].float()
    # the text after the prompt: the same position on M-RoPE's three axes
    next_pos = (pos[0] if pos.dim() == 3 else pos)[:, -1] + 1
    # the samples: row r repeated n times (its part's n), rows of a part stay contiguous
    expand = [r for r in range(len(owner)) for _ in range(parts[owner[r]].n)]
    if len(expand) > len(owner):
        sel = torch.tensor(expand, device=dev)
        cache.batch_select_indices(sel)
        logits, valid, next_pos = logits[sel], valid[sel], next_pos[sel]
    rows = _SplitRows(parts, [owner[r] for r in expand])
    active = [b for b, pi in enumerate(rows.part_of) if parts[pi].max_new > 0]
    if len(active) < len(rows.rows):
        sel = torch.tensor(active, device=dev, dtype=torch.long)
        cache.batch_select_indices(sel)
        logits, valid, next_pos = logits[sel], valid[sel], next_pos[sel]
    sufs = [s for part in parts for s in part.suffixes]
    seen = writer.seen([parts[owner[r]].prefix + sufs[r] for r in expand], logits.shape[-1])

    def pick(batch: Rows) -> torch.Tensor:
        rows.abort_cancelled(batch.active)
        return _choose(
            writer,
            parts,
            [rows.part_of[b] for b in batch.active],
            batch.logits,
            seen[batch.active] if seen is not None else None,
        )

    def take(batch: Rows, chosen: list[int], step: int) -> list[int]:
        if seen is not None:
            seen[batch.active, chosen] = True
        mass = writer.group_mass(batch.logits)
        return [
            i
            for i, (b, tid) in enumerate(zip(batch.active, chosen, strict=True))
            if _advance(writer, rows, b, tid, mass[i], step)
        ]

    def set_rows(batch: Rows) -> None:
        parts_now = [rows.part_of[b] for b in batch.active]
        shared.rows = _ranges(parts_now, group_of, len(shared.keys))

    forward = model_forward(
        model, lambda m: m[:, None, None, :], set_rows, logits_to_keep=1, **extra
    )

    for _ in decode(Rows(cache, logits, valid, next_pos, active), pick, take, forward):
        pass
    for row in rows.rows:
        if row.finish is None:
            row.finish = "length"
    return [
        Decoded(rows=rows.per_part[pi], prefilled=part.prefilled) for pi, part in enumerate(parts)
    ]


def _prefill_prefixes(
    model: Any,
    dev: torch.device,
    parts: list[Part],
    embed: Embed,
    has_image: Callable[[list[int]], bool],
) -> tuple[split.SharedPrefixes, dict[int, int]]:
    """Each part's shared prefix prefilled once; and part -> its prefix's group."""
    shared = split.SharedPrefixes()
    group_of: dict[int, int] = {}
    start = 0
    for pi, part in enumerate(parts):
        if part.prefix:
            group_of[pi] = len(shared.keys)
            ids = torch.tensor([part.prefix], device=dev)
            pos = {}
            if part.positions is not None:
                pos["position_ids"] = part.positions[0][:, None, : len(part.prefix)]
            has = part.image is not None and has_image(part.prefix)
            cache = cache_of(
                model(
                    **embed(ids, [part.image] if has and part.image else []),
                    **pos,
                    use_cache=True,
                    logits_to_keep=1,
                )
            )
            shared.add(cache, start, start + len(part.suffixes))
        start += len(part.suffixes)
    return shared, group_of


def _suffix_batch(
    dev: torch.device, pad: int, parts: list[Part], owner: list[int]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The suffixes left-padded into one batch: ids, valid, positions (continuing each
    row's prefix; ``(3, B, W)`` M-RoPE positions when a part has a screenshot) and the
    causal mask over the suffixes."""
    sufs = [s for part in parts for s in part.suffixes]
    width = max(len(s) for s in sufs)
    ids = torch.full((len(sufs), width), pad, dtype=torch.long, device=dev)
    valid = torch.zeros((len(sufs), width), dtype=torch.bool, device=dev)
    three = any(part.positions is not None for part in parts)
    pos = torch.zeros(
        (3, len(sufs), width) if three else (len(sufs), width), dtype=torch.long, device=dev
    )
    first = {pi: owner.index(pi) for pi in set(owner)}
    for r, s in enumerate(sufs):
        part = parts[owner[r]]
        p = len(part.prefix)
        ids[r, width - len(s) :] = torch.tensor(s, device=dev)
        valid[r, width - len(s) :] = True
        if part.positions is not None:
            pos[:, r, width - len(s) :] = part.positions[r - first[owner[r]]][:, p:].to(dev)
        else:
            pos[..., r, width - len(s) :] = torch.arange(p, p + len(s), device=dev)
    causal = torch.ones((width, width), dtype=torch.bool, device=dev).tril()
    # a padding query sees itself only (no fully masked row, no NaN in the cache)
    mask = (valid[:, None, :] & causal) | torch.eye(width, dtype=torch.bool, device=dev)
    return ids, valid, pos, mask


def _choose(
    writer: RowWriter,
    parts: list[Part],
    part_of: list[int],
    logits: torch.Tensor,
    seen: torch.Tensor | None,
) -> torch.Tensor:
    """The next token of each active row: greedy, or sampled at its part's temperature,
    both under the checkpoint's sampling settings."""
    chosen = pick_tokens(logits, 0.0, writer.sampling, seen)
    sampled = [i for i, pi in enumerate(part_of) if not parts[pi].greedy]
    if sampled:
        si = torch.tensor(sampled, device=writer.device)
        temps = torch.tensor(
            [max(parts[part_of[i]].temperature, 1e-5) for i in sampled], device=writer.device
        )
        chosen[si] = pick_tokens(
            logits[si], temps, writer.sampling, seen[si] if seen is not None else None, writer.rng
        )
    return chosen


def _advance(
    writer: RowWriter, rows: _SplitRows, b: int, tid: int, mass: list[float], step: int
) -> bool:
    """Append token ``tid`` to row ``b`` (streamed to its part's callback); whether the
    row goes on decoding."""
    row = rows.rows[b]
    if row.finish == "aborted":
        return False
    part = rows.part(b)
    writer.append(row, tid, mass, part.stop)
    if part.on_delta is not None:
        writer.emit(part.on_delta, *rows.where(b), row)
    return row.finish is None and len(row.tokens) < part.max_new and step + 1 < part.max_new


def _ranges(
    parts_of_rows: list[int], group_of: dict[int, int], groups: int
) -> list[tuple[int, int]]:
    """Each prefix group's contiguous range of rows (``(0, 0)`` when none is left)."""
    ranges = [(0, 0)] * groups
    for b, pi in enumerate(parts_of_rows):
        g = group_of.get(pi)
        if g is not None:
            start = ranges[g][0] if ranges[g] != (0, 0) else b
            ranges[g] = (start, b + 1)
    return ranges
