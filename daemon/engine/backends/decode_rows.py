"""The rows of a transformers decode and how a generated token joins one, shared by the
backend's two decode layouts (decode_split.py: each prefix kept once; decode_copies.py: the
prefix's cache repeated per row)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch
from webshepherd.daemon.engine.backends.base import DeltaCallback, GeneratedToken
from webshepherd.daemon.engine.backends.decode_loop import seen_mask
from webshepherd.daemon.engine.backends.tokenizer_text import IncrementalText
from webshepherd.daemon.engine.backends.vision import Image
from webshepherd.daemon.engine.sampling import Sampling

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

__all__ = ["Decoded", "Part", "Row", "RowWriter"]


@dataclass
class Row:
    ids: list[int] = field(default_factory=list)
    tokens: list[GeneratedToken] = field(default_factory=list)
    tail: str = ""  # concatenated pieces, for stop checks
    stream: IncrementalText | None = None  # the text passed to on_delta, token by token
    finish: str | None = None


@dataclass
class Decoded:
    rows: list[Row]
    prefilled: int


@dataclass
class Part:
    """One judge batch inside a decode: its token ids and its own decoding settings."""

    prefix: list[int]  # empty: nothing shared, the suffixes are whole prompts
    suffixes: list[list[int]]
    n: int
    max_new: int
    temperature: float
    stop: tuple[str, ...]
    on_delta: DeltaCallback | None
    cancel: threading.Event | None
    greedy: bool = False
    image: Image | None = None  # the screenshot whose tokens are in the prompts
    # with an image: each full prompt's (prefix + suffix) 3D positions, (3, length)
    positions: list[torch.Tensor] | None = None

    @property
    def prefilled(self) -> int:
        return len(self.prefix) + sum(len(s) for s in self.suffixes)


class RowWriter:
    """What a decode needs of its model's tokenizer and settings to grow rows: a token's text
    piece and label group, the label groups' probability mass, stop checks, streaming, the
    repetition penalty's seen tokens, and the seeded sampling generator."""

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        groups: dict[int, int],
        eos: set[int],
        *,
        device: torch.device,
        sampling: Sampling,
        ignore_stop: bool = False,
    ) -> None:
        self.tokenizer = tokenizer
        self.groups = groups
        self.eos = eos
        self.device = device
        self.sampling = sampling
        self.ignore_stop = ignore_stop
        # Sampling is seeded per call (as vLLM's backend passes a seed): the same request gives
        # the same judgements, run after run.
        self.rng = torch.Generator(device=device)
        self._group_idx = [
            torch.tensor(
                [t for t, g in groups.items() if g == grp], dtype=torch.long, device=device
            )
            for grp in range(3)
        ]
        self._pieces: dict[int, str] = {}

    def piece(self, tid: int) -> str:
        p = self._pieces.get(tid)
        if p is None:
            p = self._pieces[tid] = "" if tid in self.eos else str(self.tokenizer.decode([tid]))
        return p

    def text(self, row: Row) -> str:
        return str(self.tokenizer.decode(row.ids, skip_special_tokens=True))

    def group_mass(self, logits: torch.Tensor) -> list[list[float]]:
        """Per row, the probability mass of each label group at this step."""
        probs = torch.softmax(logits, dim=-1)
        return torch.stack([probs[:, g].sum(-1) for g in self._group_idx], dim=-1).tolist()

    def seen(self, prompts: list[list[int]], vocab: int) -> torch.Tensor | None:
        """Each row's prompt tokens as a mask, when the checkpoint has a repetition penalty."""
        return seen_mask(prompts, vocab, self.device) if self.sampling.penalizes else None

    def append(self, row: Row, tid: int, mass: list[float], stops: tuple[str, ...]) -> None:
        """Token ``tid`` joins ``row`` (an end-of-sequence token or a stop string ends it)."""
        if tid in self.eos and not self.ignore_stop:
            row.finish = "stop"
            return
        piece = self.piece(tid)
        row.ids.append(tid)
        row.tokens.append(
            GeneratedToken(
                piece=piece, group=self.groups.get(tid), mass=(mass[0], mass[1], mass[2])
            )
        )
        row.tail = (row.tail + piece)[-64:]
        if not self.ignore_stop and any(s in row.tail for s in stops):
            row.finish = "stop"

    def emit(self, on_delta: DeltaCallback, cand: int, sample: int, row: Row) -> None:
        """Passes on the text ``row``'s new token completes (an incomplete UTF-8 character
        waits for its next token); a finished row's held-back bytes go out with it."""
        if row.stream is None:
            row.stream = IncrementalText(self.tokenizer)
        delta = row.stream.extend(row.ids)
        if row.finish is not None:
            delta += row.stream.rest(self.text(row))
        if delta:
            on_delta(cand, sample, delta)
