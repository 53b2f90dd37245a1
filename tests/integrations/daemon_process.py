"""A real daemon with the tiny model, for the integration tests (which run in their own venv).

Run with the main venv's Python: ``python -m tests.integrations.daemon_process DATA_DIR``.
Prints one JSON line ``{"url": ..., "monitor_code": ...}`` when it listens (a one-time
pairing code for a monitor, made as ``webshepherd pair tui`` makes it); stops when its stdin
closes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import replace
from pathlib import Path

from webshepherd.daemon.build import running_daemon
from webshepherd.daemon.config import ModelSettings
from webshepherd.daemon.dev.tiny_model import ensure_tiny_model
from webshepherd.daemon.extension_id import EXTENSION_ID  # the built extension's

from tests.fixtures.daemon import make_settings, pairing_code


async def main(base: Path) -> None:
    settings = make_settings(base, request_timeout_s=120.0, allowed_extension_ids=(EXTENSION_ID,))
    model = ModelSettings(str(ensure_tiny_model(progress=False)), device="cpu")
    async with running_daemon(replace(settings, model=model)) as server:
        code = pairing_code(server.config.config_dir, "monitor")
        print(json.dumps({"url": server.url, "monitor_code": code}), flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)  # until the test closes our stdin


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
