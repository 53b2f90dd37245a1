"""The checkpoint's sampling settings, from its ``generation_config.json`` (sans I/O but the read).

The authors served the checkpoints with vLLM (≥ 0.8.4 for the Qwen3-based 8B), whose
OpenAI server applies the model's generation config to every request that leaves a setting
out (``--generation-config auto``, the default): ``top_p``, ``top_k``, ``repetition_penalty``
(and ``min_p``), taken from ``GenerationConfig.to_diff_dict()``, i.e. what the file sets.
Their requests (langchain's ``ChatOpenAI``) send ``temperature`` and ``n`` only, so the
request's temperature and sample count override the file and the rest comes from it.

Only what the file says applies: a key the file leaves out means no truncation (not
transformers' ``GenerationConfig`` class defaults, ``top_k=50`` in transformers 4). The file's
``temperature`` never applies: every request names its own. ``min_p`` is read and reported
but no backend here applies it (no published checkpoint sets it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

log = logging.getLogger(__name__)

GENERATION_CONFIG = "generation_config.json"


@dataclass(frozen=True)
class Sampling:
    """Truncation and penalty applied when sampling (``None``: not set, no effect).

    ``top_k`` keeps the k most likely tokens; ``top_p`` the smallest set whose probability
    reaches p; ``repetition_penalty`` divides the positive logits (multiplies the negative
    ones) of tokens already in the prompt or the output, greedy decoding included, as
    transformers and vLLM do. ``source`` says where the values came from.
    """

    top_p: float | None = None
    top_k: int | None = None
    repetition_penalty: float | None = None
    min_p: float | None = None
    source: str = "none"

    @property
    def truncates(self) -> bool:
        return (self.top_k is not None and self.top_k > 0) or (
            self.top_p is not None and self.top_p < 1.0
        )

    @property
    def penalizes(self) -> bool:
        return self.repetition_penalty is not None and self.repetition_penalty != 1.0

    def request_fields(self) -> dict[str, float | int]:
        """The settings as an OpenAI-compatible (vLLM) request's fields, the set ones only."""
        out: dict[str, float | int] = {}
        if self.top_p is not None:
            out["top_p"] = self.top_p
        if self.top_k is not None:
            out["top_k"] = self.top_k
        if self.repetition_penalty is not None:
            out["repetition_penalty"] = self.repetition_penalty
        return out

    def describe(self) -> dict[str, float | int | str | None]:
        """For a session's metadata and ``webshepherd prompt``."""
        return {
            "top_p": self.top_p,
            "top_k": self.top_k,
            "repetition_penalty": self.repetition_penalty,
            "min_p": self.min_p,
            "source": self.source,
        }


NO_SAMPLING = Sampling()
N = TypeVar("N", int, float)


def _number(value: object, kind: Callable[[float], N]) -> N | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return kind(value)


def sampling_from_json(data: Mapping[str, object], source: str) -> Sampling:
    """The sampling settings a ``generation_config.json`` object sets."""
    top_k = _number(data.get("top_k"), int)
    return Sampling(
        top_p=_number(data.get("top_p"), float),
        # top_k 0 or -1 means "off" in transformers and vLLM alike
        top_k=top_k if top_k is not None and top_k > 0 else None,
        repetition_penalty=_number(data.get("repetition_penalty"), float),
        min_p=_number(data.get("min_p"), float),
        source=source,
    )


def read_sampling(model: str, *, local_files_only: bool = True) -> Sampling:
    """The checkpoint's settings: ``model`` is a folder or a hub id (its cached file, or a
    download unless ``local_files_only``). No file, or an unreadable one: :data:`NO_SAMPLING`
    (vLLM's neutral defaults), said in the log."""
    path: str | None = None
    folder = Path(model).expanduser()
    if folder.is_dir():
        candidate = folder / GENERATION_CONFIG
        path = str(candidate) if candidate.exists() else None
    else:
        try:
            from transformers.utils import cached_file

            path = cached_file(
                model,
                GENERATION_CONFIG,
                local_files_only=local_files_only,
                _raise_exceptions_for_missing_entries=False,
                _raise_exceptions_for_connection_errors=False,
            )
        except Exception as e:
            log.debug("no %s for %s (%s)", GENERATION_CONFIG, model, e)
    if path is None:
        log.info(
            "%s has no %s: sampling from the untruncated distribution", model, GENERATION_CONFIG
        )
        return NO_SAMPLING
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        log.warning("cannot read %s of %s (%s): no truncation applied", GENERATION_CONFIG, model, e)
        return NO_SAMPLING
    if not isinstance(data, dict):
        return NO_SAMPLING
    return sampling_from_json(data, f"{model}/{GENERATION_CONFIG}")
