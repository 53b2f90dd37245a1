"""Where the dev models the project builds itself (the tiny text and vision models) are cached,
and how a whole one is told from a half-written one: each is written to a temporary folder,
its marker file (the build's metadata) last, then renamed into place."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


class SavesPretrained(Protocol):
    """What is saved beside a model: its files written into a folder."""

    def save_pretrained(self, folder: Path, /) -> object: ...


@dataclass(frozen=True)
class ModelCache:
    """One kind of dev model: ``$env`` or ``<user cache>/webshepherd/<name>-v<version>``."""

    env: str
    name: str
    version: int
    marker: str

    def default_path(self) -> Path:
        """``$env`` or ``<user cache>/webshepherd/<name>-v<version>``."""
        override = os.environ.get(self.env)
        if override:
            return Path(override).expanduser()
        from platformdirs import user_cache_dir

        return Path(user_cache_dir("webshepherd")) / f"{self.name}-v{self.version}"

    def is_complete(self, path: Path) -> bool:
        """Whether ``path`` holds a fully written model of this version."""
        try:
            meta = json.loads((path / self.marker).read_text("utf-8"))
        except (OSError, ValueError):
            return False
        return bool(meta.get("complete")) and meta.get("version") == self.version

    def save(
        self,
        tmp: Path,
        target: Path,
        model: PreTrainedModel,
        tok: PreTrainedTokenizerBase,
        extras: Sequence[SavesPretrained],
        meta: dict[str, Any],
        *,
        started: float,
        replace: bool,
    ) -> Path:
        """Save the trained ``model`` (generating until the tokenizer's end token), ``tok`` and
        ``extras`` into ``tmp`` with ``save_pretrained``, write the marker (``meta``, the
        parameter count and the build time since ``started``), rename into place at ``target``;
        ``replace=False`` keeps a complete model another process saved meanwhile."""
        model.generation_config.eos_token_id = tok.eos_token_id
        model.generation_config.pad_token_id = tok.pad_token_id
        for part in (model, tok, *extras):
            part.save_pretrained(tmp)
        marker = {
            "version": self.version,
            "complete": True,
            **meta,
            "parameters": sum(p.numel() for p in model.parameters()),
            "build_seconds": round(time.monotonic() - started, 1),
        }
        (tmp / self.marker).write_text(json.dumps(marker, indent=1), "utf-8")
        if target.exists():
            if not replace and self.is_complete(target):  # another process finished first
                shutil.rmtree(tmp, ignore_errors=True)
                return target
            trash = target.with_name(f".{target.name}.old-{os.getpid()}")
            target.rename(trash)
            shutil.rmtree(trash, ignore_errors=True)
        try:
            tmp.rename(target)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if not self.is_complete(target):
                raise
        return target
