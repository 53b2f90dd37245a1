"""The backend table and :func:`load_engine`: an :class:`Engine` on one of the backends, with
errors that say how to fix them.

Each backend's loading module exports its table entry (its ``--backend`` help, loader and
options: backends/transformers_loading.py, vllm_loading.py, openai_loading.py), and this
table names them; ``serve``'s flags, ``build_engine``'s checks and ``ModelSettings.options``
read it, so a new backend is its loading module plus one entry here. ``transformers``
(default) and ``vllm`` (CUDA, or vLLM's CPU platform) load a local folder or a hub id in this
process; ``openai`` scores through an OpenAI-compatible completions server and
``openai-chat`` through any chat-completions server, both probed at start-up.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from webshepherd.daemon.engine.backends import openai_loading, transformers_loading, vllm_loading
from webshepherd.daemon.engine.backends.table import BackendKind, BackendOption
from webshepherd.daemon.engine.engine import Engine, EngineConfig
from webshepherd.daemon.engine.types import JudgeInputs
from webshepherd.protocol.errors import ModelUnavailableError

__all__ = [
    "BACKENDS",
    "BACKEND_OPTIONS",
    "BackendKind",
    "BackendOption",
    "backend_kind",
    "load_engine",
]

log = logging.getLogger(__name__)

#: every backend, by its ``--backend`` name
BACKENDS: dict[str, BackendKind] = {
    "transformers": transformers_loading.ENTRY,
    "vllm": vllm_loading.ENTRY,
    "openai": openai_loading.ENTRY,
    "openai-chat": openai_loading.CHAT_ENTRY,
}

#: every backend option, in ``serve --help``'s order
BACKEND_OPTIONS: dict[str, BackendOption] = {**openai_loading.OPTIONS, **vllm_loading.OPTIONS}


def backend_kind(backend: str) -> BackendKind:
    """The table's entry for ``backend``; ``ModelUnavailableError`` naming the choices."""
    kind = BACKENDS.get(backend)
    if kind is None:
        raise ModelUnavailableError(
            f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}"
        )
    return kind


def load_engine(
    model: str,
    *,
    device: str = "auto",
    config: EngineConfig | None = None,
    backend: str = "transformers",
    inputs_from_model: bool = False,
    **options: object,
) -> Engine:
    """An :class:`Engine` on ``backend`` (see :data:`BACKENDS`); ``ModelUnavailableError`` says
    what was tried and how to fix it. ``options``: the backend's (:data:`BACKEND_OPTIONS`, a
    secret's value under its ``secret`` name: ``api_key``), e.g. ``base_url``;
    ``inputs_from_model``: judge with what the checkpoint was trained on (``text+image`` for
    a vision-language checkpoint in this process) instead of ``config.judge_inputs``. The
    vllm backend's context is ``config.max_context`` (at most the model's own)."""
    kind = backend_kind(backend)
    config = config or EngineConfig()
    loaded = kind.load(model, device, config.max_context or None, **options)
    if inputs_from_model:
        trained: JudgeInputs = (
            "text+image" if kind.images_trained and loaded.accepts_images else "text"
        )
        config = replace(config, judge_inputs=trained)
        log.info("judging with %s (what %s was trained on)", trained, model)
    if config.judge_inputs == "text+image" and not loaded.accepts_images:
        loaded.close()
        raise ModelUnavailableError(
            f"--judge-inputs text+image: the {backend} backend with {model} takes no images "
            "(use a vision-language checkpoint such as `webshepherd dev tiny-model --vision DIR`, "
            "--backend openai-chat with a vision chat model, or --judge-inputs text)"
        )
    return Engine(loaded, config)
