"""Streaming cost per token: the whole row re-decoded every token (before) vs incremental.

A judge row of N output tokens (N = 50 and 500: the tiny model's byte-level BPE tokenizer on
judge-style text, with accented, CJK and emoji characters split over byte tokens) is
streamed token by token the two ways, side by side, repeats interleaved:

- ``redecode`` (before): every token, ``tokenizer.decode(all ids so far)``, the delta being
  what follows the text already sent (the transformers backend's old ``_emit``);
- ``incremental`` (after): :class:`IncrementalText` (``tokenizers`` ``DecodeStream``),
  plus the one whole decode at the row's end that passes on any held-back bytes.

Reported: microseconds per streamed token (median over repeats) at each N, and the ratio;
constant cost per token shows as the same figure at 50 and 500. The deltas of both ways are
checked to join to the decoded text.

    .venv/bin/python bench/stream_decode.py [--repeats R] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from transformers import AutoTokenizer
from webshepherd.daemon.dev.tiny_data import judge_example
from webshepherd.daemon.dev.tiny_model import ensure_tiny_model
from webshepherd.daemon.engine.backends.tokenizer_text import IncrementalText, encode_plain

LENGTHS = (50, 500)
EXTRA = " Le café coûte 5 €; 日本語のページ 😀 ok."


def _ids(tokenizer: Any, n: int) -> list[int]:
    rng, ids = random.Random(0), list[int]()
    while len(ids) < n:
        ids += encode_plain(tokenizer, judge_example(rng).answer + EXTRA + "\n")
    return ids[:n]


def redecode(tokenizer: Any, ids: list[int]) -> list[str]:
    """The old way: the whole row decoded for every token."""
    deltas, sent = list[str](), ""
    for i in range(1, len(ids) + 1):
        text = tokenizer.decode(ids[:i], skip_special_tokens=True)
        if i < len(ids) and text.endswith("\ufffd"):
            continue
        if text.startswith(sent) and len(text) > len(sent):
            deltas.append(text[len(sent) :])
            sent = text
    return deltas


def incremental(tokenizer: Any, ids: list[int]) -> list[str]:
    """The new way: a decode stream, one whole decode at the end."""
    stream, deltas, row = IncrementalText(tokenizer), list[str](), list[int]()
    for tid in ids:
        row.append(tid)
        deltas.append(stream.extend(row))
    deltas.append(stream.rest(tokenizer.decode(row, skip_special_tokens=True)))
    return deltas


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    tokenizer = AutoTokenizer.from_pretrained(str(ensure_tiny_model()))
    ways = {"redecode": redecode, "incremental": incremental}
    result: dict[str, Any] = {"tokenizer": "tiny model (byte-level BPE)", "lengths": {}}
    for n in LENGTHS:
        ids = _ids(tokenizer, n)
        text = tokenizer.decode(ids, skip_special_tokens=True)
        times: dict[str, list[float]] = {w: [] for w in ways}
        for _ in range(args.repeats):
            for name, way in ways.items():
                t0 = time.perf_counter()
                deltas = way(tokenizer, ids)
                times[name].append((time.perf_counter() - t0) / n * 1e6)
                if "".join(deltas) != text:
                    raise SystemExit(f"{name}: the streamed deltas differ from the decoded text")
        row = {w: round(statistics.median(t), 2) for w, t in times.items()}
        row["ratio"] = round(row["redecode"] / row["incremental"], 2)
        result["lengths"][str(n)] = row
        print(
            f"{n:>4} tokens: redecode {row['redecode']:8.2f} us/token   "
            f"incremental {row['incremental']:8.2f} us/token   ({row['ratio']:.1f}x)"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
