"""The one way to assemble a daemon from :class:`~webshepherd.daemon.config.Settings`.

:func:`build_engine` loads the model the settings name, :func:`build_daemon` makes the server
on an engine (that one, or one given: a test's scripted judge, an engine shared by several
daemons), :func:`running_daemon` starts and stops it around a block, :func:`run_until_signal`
serves until SIGINT or SIGTERM, :func:`in_process_daemon` runs one in this process on a free
loopback port with a fresh token and temporary directories. ``webshepherd serve``, the demos,
``webshepherd rescore --model``, the benches and the tests' fixtures all build their daemon
here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webshepherd.daemon.config import Settings
from webshepherd.protocol.errors import ModelUnavailableError

if TYPE_CHECKING:
    from webshepherd.daemon.engine.api import EngineAPI
    from webshepherd.daemon.engine.engine import Engine
    from webshepherd.daemon.server.server import DaemonServer


def build_engine(settings: Settings) -> Engine:
    """Load the engine ``settings.model`` names with ``settings.engine``; a setting that does
    not fit the backend, or a missing model, raises ``ModelUnavailableError`` saying what to fix
    (the messages name ``webshepherd serve``'s flags)."""
    from webshepherd.daemon.engine.loader import (
        BACKEND_OPTIONS,
        BACKENDS,
        backend_kind,
        load_engine,
    )

    m = settings.model
    kind = backend_kind(m.backend)
    unknown = sorted(set(m.options) - set(BACKEND_OPTIONS))
    if unknown:
        raise ModelUnavailableError(f"unknown backend option(s): {', '.join(unknown)}")
    given = {n: v for n, v in m.options.items() if v not in (None, BACKEND_OPTIONS[n].default)}
    misfits: dict[tuple[str, ...], list[str]] = {}  # the backends that take them -> flags
    for name in BACKEND_OPTIONS:
        if name in given and name not in kind.options:
            takers = tuple(b for b, k in BACKENDS.items() if name in k.options)
            misfits.setdefault(takers, []).append(BACKEND_OPTIONS[name].flag)
    for takers, flags in misfits.items():
        if len(takers) > 1:
            raise ModelUnavailableError(
                f"{', '.join(flags)} only apply to --backend {' or '.join(takers)} "
                f"(the backend is {m.backend})"
            )
        raise ModelUnavailableError(
            f"{flags[0]} only applies to --backend {takers[0]} (not {m.backend})"
        )
    max_context = settings.engine.max_context
    if max_context is not None and max_context <= 0:
        raise ModelUnavailableError("--max-context: a number of tokens, or 0 for the model's own")
    options: dict[str, object] = {}
    for name, value in given.items():
        secret = BACKEND_OPTIONS[name].secret
        if secret is None:
            options[name] = value
            continue
        options[secret] = os.environ.get(str(value))
        if not options[secret]:
            raise ModelUnavailableError(
                f"{BACKEND_OPTIONS[name].flag} {value}: that environment variable is not set "
                "or empty"
            )
    return load_engine(
        m.model,
        device=m.device,
        config=settings.engine,
        backend=m.backend,
        inputs_from_model=m.inputs_from_model,
        **options,
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


@contextlib.asynccontextmanager
async def in_process_daemon(
    engine: EngineAPI, data_dir: Path, config_dir: Path, samples: int, **config: Any
) -> AsyncIterator[tuple[DaemonServer, str]]:
    """A daemon in this process on an ephemeral loopback port: a fresh token, data and config
    in the given directories, no approval rules and no guard rules unless ``config`` (more
    ``DaemonConfig`` fields) names them; yields ``(daemon, token)`` and stops it. ``webshepherd
    rescore --model`` and the demos start theirs here."""
    from webshepherd.daemon.sessions.guards import GuardPolicy

    config.setdefault("guards", GuardPolicy(rules=frozenset()))
    settings = Settings.local(
        data_dir,
        data_dir=data_dir,
        config_dir=config_dir,
        approval_threshold=None,
        approval_drop=None,
        default_samples=samples,
        **config,
    )
    async with running_daemon(settings, engine) as server:
        assert settings.daemon.token is not None
        yield server, settings.daemon.token


def run_until_signal(settings: Settings, engine: EngineAPI | None = None) -> None:
    """Serve :func:`build_daemon`'s daemon until SIGINT or SIGTERM (blocking)."""
    from webshepherd.daemon.server.server import serve_until_signal

    async def main() -> None:
        await serve_until_signal(build_daemon(settings, engine))

    asyncio.run(main())
