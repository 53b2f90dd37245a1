"""A script's expected errors end in their one line, no traceback (``-v``: with it): the
examples run as a person runs them, against a real daemon on loopback (a wrong token, a wrong
path) and against none; an unexpected error still shows its traceback."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from webshepherd.protocol.client.script import one_line_errors

from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.ports import closed_port
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon

ROOT = Path(__file__).resolve().parents[3]
TRACEBACK = "Traceback (most recent call last)"


async def run(args: list[str], url: str, token: str, tmp_path: Path) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WEBSHEPHERD_")}
    env.update(
        WEBSHEPHERD_URL=url,
        WEBSHEPHERD_TOKEN=token,
        WEBSHEPHERD_CONFIG_DIR=str(tmp_path / "client-config"),
        WEBSHEPHERD_KEYRING="0",
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)  # a hang guard
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_no_daemon_is_one_line(tmp_path: Path) -> None:
    url = f"ws://127.0.0.1:{closed_port()}/v1"
    code, out, err = await run(["examples/sdk_async.py"], url, TEST_TOKEN, tmp_path)
    assert code == 1 and out == ""
    assert err.startswith(f"sdk_async.py: cannot reach the webshepherd daemon at {url} (")
    assert err.endswith("); is it running? start it with `webshepherd serve`\n")
    assert err.count("\n") == 1, err


async def test_a_wrong_token_and_a_wrong_path_are_one_line_and_v_shows_the_traceback(
    tmp_path: Path,
) -> None:
    async with scripted_daemon(tmp_path, ScriptedJudge({})) as server:
        base = server.url.removesuffix("/v1")
        example = ["examples/sdk_async.py"]
        wrong_token = await run(example, server.url, "not-the-token", tmp_path)
        wrong_path = await run(example, base + "/", TEST_TOKEN, tmp_path)
        verbose = await run([*example, "-v"], server.url, "not-the-token", tmp_path)
        argparsed = await run(["examples/reward_guided.py", "-v"], base, TEST_TOKEN, tmp_path)
    assert wrong_token == (1, "", "sdk_async.py: wrong token (see `webshepherd token`)\n")
    assert wrong_path == (
        1,
        "",
        f"sdk_async.py: wrong path: {base}/ is not the daemon's address (HTTP 404); "
        f"the daemon serves {base}/v1\n",
    )
    code, _, err = verbose
    assert code == 1 and err.startswith(TRACEBACK), err
    assert err.endswith("UnauthorizedError: wrong token (see `webshepherd token`)\n")
    code, _, err = argparsed  # -v is taken out before the script's own argparse reads them
    assert code == 1 and err.startswith(TRACEBACK) and "the daemon serves" in err, err


async def test_an_unexpected_error_keeps_its_traceback(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text(
        "from webshepherd.protocol.client.script import one_line_errors\n"
        "one_line_errors()\n"
        "raise ValueError('a bug')\n"
    )
    code, _, err = await run([str(script)], "ws://127.0.0.1:1/v1", TEST_TOKEN, tmp_path)
    assert code == 1 and err.startswith(TRACEBACK) and err.endswith("ValueError: a bug\n")


def test_v_is_taken_out_of_the_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "excepthook", sys.__excepthook__)
    argv = ["x.py", "URL", "-v", "--flag"]
    assert one_line_errors(argv) is True
    assert argv == ["x.py", "URL", "--flag"]
    assert one_line_errors(["x.py", "URL"]) is False
