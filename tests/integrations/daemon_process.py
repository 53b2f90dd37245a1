"""A real daemon with the tiny model, for the integration tests (which run in their own venv).

Run with the main venv's Python: ``python -m tests.integrations.daemon_process DATA_DIR``.
Prints one JSON line ``{"url": ...}`` when it listens; stops when its stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from webshepherd.daemon.dev.tiny_model import ensure_tiny_model
from webshepherd.daemon.engine.loader import load_engine
from webshepherd.daemon.server.extension_id import EXTENSION_ID  # the built extension's
from webshepherd.daemon.server.server import DaemonServer

from tests.fixtures.daemon import FAST, make_config


async def main(base: Path) -> None:
    engine = load_engine(str(ensure_tiny_model(progress=False)), device="cpu", config=FAST)
    config = make_config(base, request_timeout_s=120.0, allowed_extension_ids=(EXTENSION_ID,))
    server = DaemonServer(config, engine)
    await server.start()
    print(json.dumps({"url": server.url}), flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the test closes our stdin
    await server.stop()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
