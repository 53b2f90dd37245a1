"""The key-value cache under the name the installed transformers gives it.

transformers renamed a model's ``past_key_values`` (argument and output field) to ``cache``
(5.2x) and warns on the old name; the project supports releases from before the rename
(``transformers>=4.46``) too. These helpers pass the cache in and read it back by whichever
name the model's ``forward`` and its output declare, so neither side warns.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from transformers import Cache
    from transformers.utils import ModelOutput

NEW, OLD = "cache", "past_key_values"


_NAMES: dict[type, str] = {}  # per model class


def cache_name(model: torch.nn.Module) -> str:
    """The name ``model.forward`` takes the cache by: ``cache`` or ``past_key_values``."""
    kind = type(model)
    if kind not in _NAMES:
        params = inspect.signature(getattr(kind, "forward")).parameters  # noqa: B009
        _NAMES[kind] = NEW if NEW in params else OLD
    return _NAMES[kind]


def cache_kwargs(model: torch.nn.Module, cache: Cache | None) -> dict[str, Cache | None]:
    """``cache`` as the keyword argument ``model.forward`` takes."""
    return {cache_name(model): cache}


def cache_of(output: ModelOutput) -> Cache:
    """The cache a model's output carries (``output.cache``, else ``past_key_values``)."""
    fields = getattr(type(output), "__dataclass_fields__", {})
    cache: Cache = getattr(output, NEW) if NEW in fields else getattr(output, OLD)
    return cache
