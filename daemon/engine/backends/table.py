"""The backend table's entry types: each backend's loading module exports one
:class:`BackendKind` (its ``--backend`` help, loader, options) and the
:class:`BackendOption` s it takes (their ``serve`` flags); ``engine/loader.py`` keeps the
table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from webshepherd.daemon.engine.backends.base import Backend

__all__ = ["BackendKind", "BackendOption"]


@dataclass(frozen=True)
class BackendOption:
    """One backend setting: its key in ``ModelSettings.options`` and ``load_engine``'s keywords,
    and ``webshepherd serve``'s flag for it (argparse's ``metavar``, ``type``, ``choices``)."""

    flag: str
    help: str
    default: object = None
    metavar: str | None = None
    type: Callable[[str], object] | None = None
    choices: tuple[str, ...] | None = None
    secret: str | None = None  # names an environment variable; the loader gets its value so


@dataclass(frozen=True)
class BackendKind:
    """One backend: what ``--backend``'s help says of it, the options it takes, and its loader
    (``model``, ``device``, the engine's context, then the options as keywords)."""

    help: str
    load: Callable[..., Backend]
    options: tuple[str, ...] = ()
    remote: bool = False  # scores through a server (serve says where instead of the device)
    # the server's model is the one judged (serve names --remote-model, not --model)
    judges_remote_model: bool = False
    images_trained: bool = False  # a vision-language checkpoint here was trained on images
