"""Where a model's files are: a local folder, the Hugging Face cache, or the hub, and what to
say when none has them (every in-process backend's loading reads them here)."""

from __future__ import annotations

import json
import os
import socket
import urllib.parse
from pathlib import Path

from webshepherd.protocol.errors import ModelUnavailableError

__all__ = [
    "HUB_PROBE_S",
    "check_folder",
    "fix_hint",
    "hub_unreachable",
    "looks_local",
    "model_positions",
    "offline",
    "short_error",
]


def fix_hint(model: str) -> str:
    """How to get past a model that cannot be loaded: the hub id asked for, or a folder, and
    the shipped tiny judge to try webshepherd meanwhile."""
    tiny = (
        "to try webshepherd without it, serve the tiny judge that ships with the package: "
        '`webshepherd serve --model "$(webshepherd dev tiny-model --quiet)"`'
    )
    if looks_local(model):
        return f"To fix: pass a model folder (one with config.json), or {tiny}."
    return (
        f"To fix: download it where there is network (`hf download {model}`) and copy the "
        f"Hugging Face cache (or the folder) here, or {tiny}."
    )


#: How long the hub's address may take to answer before a download is skipped.
HUB_PROBE_S = 3.0


def hub_unreachable() -> str | None:
    """Why the Hugging Face hub (``$HF_ENDPOINT``) cannot be reached, or None when it can:
    one quick connection, so an offline start fails at once instead of after the hub
    client's retries (about 50 s of them, each warning printed again)."""
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    parts = urllib.parse.urlsplit(endpoint)
    host = parts.hostname or ""
    port = parts.port or (80 if parts.scheme == "http" else 443)
    try:
        with socket.create_connection((host, port), timeout=HUB_PROBE_S):
            return None
    except OSError as e:
        return f"{host}:{port} cannot be reached ({short_error(e)})"


def looks_local(model: str) -> bool:
    """A filesystem path rather than a hub id (``owner/name`` or ``name``)."""
    return model.startswith((".", "/", "~")) or "\\" in model or model.count("/") > 1


def short_error(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text[:200]}" if text else type(e).__name__


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


def check_folder(model: str) -> None:
    path = Path(model).expanduser()
    if path.exists() and (not path.is_dir() or not (path / "config.json").exists()):
        raise ModelUnavailableError(
            f"cannot load model {model!r}: {path} exists but is not a model folder "
            f"(no config.json). {fix_hint(model)}"
        )
    if not path.exists() and looks_local(model):
        raise ModelUnavailableError(
            f"cannot load model {model!r}: the local folder {path} does not exist. "
            + fix_hint(model)
        )


def model_positions(model: str) -> int | None:
    """The positions the checkpoint allows: ``max_position_embeddings`` of its config.json (a
    vision-language model's ``text_config``), from a local folder or the Hugging Face cache;
    None when neither has it."""
    path = Path(model).expanduser() / "config.json"
    if not path.is_file():
        if looks_local(model):
            return None
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(model, "config.json")
        except Exception:  # no huggingface_hub, a malformed id
            return None
        if not isinstance(cached, str):
            return None
        path = Path(cached)
    try:
        config = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    for scope in (config, config.get("text_config")):
        value = scope.get("max_position_embeddings") if isinstance(scope, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
