"""The one way to assemble a daemon from :class:`~webshepherd.daemon.config.Settings`.

:func:`build_engine` loads the model the settings name, :func:`build_daemon` makes the server
on an engine (that one, or one given: a test's scripted judge, an engine shared by several
daemons), :func:`running_daemon` starts and stops it around a block, :func:`run_until_signal`
serves until SIGINT or SIGTERM. ``webshepherd serve``, the demos, ``webshepherd rescore
--model``, the benches and the tests' fixtures all build their daemon here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from webshepherd.daemon.config import Settings
from webshepherd.protocol.errors import ModelUnavailableError

if TYPE_CHECKING:
    from webshepherd.daemon.engine.api import EngineAPI
    from webshepherd.daemon.engine.engine import Engine
    from webshepherd.daemon.server.server import DaemonServer

REMOTE_BACKENDS = ("openai", "openai-chat")
_REMOTE_FIELDS = (
    ("base_url", "--base-url"),
    ("api_key_env", "--api-key-env"),
    ("remote_model", "--remote-model"),
)


def build_engine(settings: Settings) -> Engine:
    """Load the engine ``settings.model`` names with ``settings.engine``; a setting that does
    not fit the backend, or a missing model, raises ``ModelUnavailableError`` saying what to fix
    (the messages name ``webshepherd serve``'s flags)."""
    from webshepherd.daemon.engine.loader import load_engine

    m = settings.model
    if m.backend not in REMOTE_BACKENDS:
        given = [flag for name, flag in _REMOTE_FIELDS if getattr(m, name)]
        if given:
            raise ModelUnavailableError(
                f"{', '.join(given)} only apply to --backend openai or openai-chat "
                f"(the backend is {m.backend})"
            )
    if m.vllm_memory is not None and m.backend != "vllm":
        raise ModelUnavailableError(
            f"--vllm-memory only applies to --backend vllm (not {m.backend})"
        )
    if m.dtype != "auto" and m.backend != "vllm":
        raise ModelUnavailableError(f"--dtype only applies to --backend vllm (not {m.backend})")
    max_context = settings.engine.max_context
    if max_context is not None and max_context <= 0:
        raise ModelUnavailableError("--max-context: a number of tokens, or 0 for the model's own")
    api_key = None
    if m.api_key_env:
        api_key = os.environ.get(m.api_key_env)
        if not api_key:
            raise ModelUnavailableError(
                f"--api-key-env {m.api_key_env}: that environment variable is not set or empty"
            )
    return load_engine(
        m.model,
        device=m.device,
        config=settings.engine,
        backend=m.backend,
        base_url=m.base_url,
        api_key=api_key,
        remote_model=m.remote_model,
        inputs_from_model=m.inputs_from_model,
        vllm_memory=m.vllm_memory,
        dtype=m.dtype,
    )


def build_daemon(settings: Settings, engine: EngineAPI | None = None) -> DaemonServer:
    """The daemon ``settings.daemon`` describes, on ``engine`` (None: :func:`build_engine`'s);
    not started. A bind the settings forbid raises ``WebShepherdError``."""
    from webshepherd.daemon.server.server import DaemonServer

    return DaemonServer(settings.daemon, engine if engine is not None else build_engine(settings))


@contextlib.asynccontextmanager
async def running_daemon(
    settings: Settings, engine: EngineAPI | None = None
) -> AsyncIterator[DaemonServer]:
    """:func:`build_daemon`'s daemon, started; stopped when the block ends."""
    server = build_daemon(settings, engine)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def run_until_signal(settings: Settings, engine: EngineAPI | None = None) -> None:
    """Serve :func:`build_daemon`'s daemon until SIGINT or SIGTERM (blocking)."""
    from webshepherd.daemon.server.server import serve_until_signal

    async def main() -> None:
        await serve_until_signal(build_daemon(settings, engine))

    asyncio.run(main())
