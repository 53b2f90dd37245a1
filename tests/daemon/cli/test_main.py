"""``webshepherd``'s expected errors (the project's root exception) end in their one line on
stderr, no traceback; ``-v`` shows the traceback too. Against a real daemon on loopback."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon

ROOT = Path(__file__).resolve().parents[3]


async def webshepherd(*args: str, tmp_path: Path) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WEBSHEPHERD_")}
    env.update(
        WEBSHEPHERD_TOKEN=TEST_TOKEN,
        WEBSHEPHERD_CONFIG_DIR=str(tmp_path / "cli-config"),
        WEBSHEPHERD_DATA_DIR=str(tmp_path / "cli-data"),
        WEBSHEPHERD_KEYRING="0",
    )
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "webshepherd.daemon.cli", *args),
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), 120)  # a hang guard
    assert proc.returncode is not None
    return proc.returncode, err.decode()


async def test_an_expected_error_is_one_line_and_v_adds_the_traceback(tmp_path: Path) -> None:
    async with scripted_daemon(tmp_path, ScriptedJudge({})) as server:
        wrong = server.url.removesuffix("/v1") + "/"
        rescore = ("rescore", "examples/data/run.jsonl", "--url", wrong)
        quiet = await webshepherd(*rescore, tmp_path=tmp_path)
        verbose = await webshepherd("-v", *rescore, tmp_path=tmp_path)
    line = (
        f"webshepherd: wrong path: {wrong} is not the daemon's address (HTTP 404); "
        f"the daemon serves {server.url}\n"
    )
    assert quiet == (1, line)
    code, err = verbose
    assert code == 1 and err.endswith(line)
    assert "Traceback (most recent call last)" in err and "ConnectionLostError" in err, err
