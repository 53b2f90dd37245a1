"""Label masses from top-k log-probabilities, shared by the OpenAI and vLLM backends (no I/O).

A backend that only sees the k most likely tokens at each generated position sums the
probabilities of the label variants among them (``label_source="top_k"``): label tokens
outside the top k count 0, so the mass is a lower bound of the full-vocabulary one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from webshepherd.daemon.engine.backends.base import GeneratedToken
from webshepherd.daemon.engine.labels import _WORDS

Mass = tuple[float, float, float]


def label_group(piece: str) -> int | None:
    """The label group of a token's text (``"Yes"``, ``" Yes"``, ``"\\nYes"``), else None."""
    word = piece[1:] if piece[:1] in (" ", "\n") else piece
    for group, words in _WORDS.items():
        if word in words:
            return group
    return None


def mass_by_piece(top: Mapping[str, float | None] | None) -> Mass:
    """Label mass of one position from ``{token text: logprob}`` (the completions API format)."""
    mass = [0.0, 0.0, 0.0]
    for piece, logprob in (top or {}).items():
        g = label_group(piece)
        if g is not None and logprob is not None:
            mass[g] += math.exp(logprob)
    return (mass[0], mass[1], mass[2])


def mass_by_id(top: Mapping[int, float], groups: Mapping[int, int]) -> Mass:
    """Label mass of one position from ``{token id: logprob}``; ``groups``: label id -> group."""
    mass = [0.0, 0.0, 0.0]
    for tid, logprob in top.items():
        g = groups.get(tid)
        if g is not None:
            mass[g] += math.exp(logprob)
    return (mass[0], mass[1], mass[2])


def piece_token(piece: str, top: Mapping[str, float | None] | None) -> GeneratedToken:
    """A generated token known by its text and its position's top-k ``{text: logprob}``."""
    return GeneratedToken(piece=piece, group=label_group(piece), mass=mass_by_piece(top))
