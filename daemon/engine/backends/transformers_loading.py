"""The transformers backend's table entry: a model from a local folder, the Hugging Face cache,
then a download (not offline), loaded in this process on any device."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from webshepherd.daemon.engine.backends.model_files import (
    check_folder,
    fix_hint,
    hub_unreachable,
    looks_local,
    offline,
    short_error,
)
from webshepherd.daemon.engine.backends.table import BackendKind
from webshepherd.protocol.errors import ModelUnavailableError

if TYPE_CHECKING:
    from webshepherd.daemon.engine.backends.base import Backend
    from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend

__all__ = ["ENTRY", "load_backend"]

log = logging.getLogger(__name__)


def load_backend(model: str, *, device: str = "auto") -> TransformersBackend:
    """Try a local folder, the HF cache (``local_files_only``), then a download (not if offline)."""
    from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend

    tried: list[str] = []
    path = Path(model).expanduser()
    if path.exists():
        check_folder(model)  # a file, or a folder without config.json
        try:
            return TransformersBackend.load(str(path), device=device, local_files_only=True)
        except Exception as e:
            raise ModelUnavailableError(
                f"cannot load model {model!r} from the local folder {path}: "
                f"{short_error(e)} (bad or incomplete files?). {fix_hint(model)}"
            ) from e
    tried.append(f"local folder {path} (does not exist)")
    if looks_local(model):
        raise ModelUnavailableError(
            f"cannot load model {model!r}: tried {'; '.join(tried)}. {fix_hint(model)}"
        )
    try:
        return TransformersBackend.load(model, device=device, local_files_only=True)
    except Exception as e:
        tried.append(f"Hugging Face cache with local_files_only ({short_error(e)})")
    unreachable = None if offline() else hub_unreachable()
    if offline():
        tried.append("download (skipped: HF_HUB_OFFLINE is set)")
    elif unreachable is not None:
        tried.append(f"download (skipped: {unreachable})")
    else:
        try:
            return TransformersBackend.load(model, device=device)
        except Exception as e:
            tried.append(f"download from the Hugging Face hub ({short_error(e)})")
    raise ModelUnavailableError(
        f"cannot load model {model!r}: tried {'; '.join(tried)}. {fix_hint(model)}"
    )


def _transformers(model: str, device: str, context: int | None) -> Backend:
    loaded = load_backend(model, device=device)
    log.info("loaded %s on %s", model, loaded.device)
    return loaded


ENTRY = BackendKind("this process, any device", _transformers, images_trained=True)
