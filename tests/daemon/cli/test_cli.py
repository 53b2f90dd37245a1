"""The real ``webshepherd`` command in a subprocess, with temp config and data dirs."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from webshepherd.protocol.json_schema import SCHEMA_PATH
from websockets.asyncio.client import connect

WEBSHEPHERD = [sys.executable, "-m", "webshepherd.daemon.cli"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = dict(os.environ)
    e.update(
        WEBSHEPHERD_CONFIG_DIR=str(tmp_path / "config"),
        WEBSHEPHERD_DATA_DIR=str(tmp_path / "data"),
        WEBSHEPHERD_KEYRING="0",
        HF_HUB_OFFLINE="1",
        NO_COLOR="1",
    )
    e.pop("WEBSHEPHERD_TOKEN", None)
    return e


def run(
    args: list[str], env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*WEBSHEPHERD, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_token_prints_the_token_alone_and_keeps_it(env: dict[str, str], tmp_path: Path) -> None:
    first = run(["token"], env)
    assert first.returncode == 0, first.stderr
    token = first.stdout.strip()
    assert first.stdout == token + "\n" and re.fullmatch(r"[A-Za-z0-9_-]{32,}", token)
    assert run(["token"], env).stdout.strip() == token
    stored = tmp_path / "config" / "token"
    assert stored.read_text().strip() == token
    assert stored.stat().st_mode & 0o077 == 0, "the token file is readable by its owner only"


def test_token_rotate_replaces_it(env: dict[str, str]) -> None:
    old = run(["token"], env).stdout.strip()
    rotated = run(["token", "--rotate"], env)
    assert rotated.returncode == 0
    new = rotated.stdout.strip()
    assert new != old and rotated.stdout == new + "\n"
    assert run(["token"], env).stdout.strip() == new


def test_schema_check_passes_on_the_committed_file(env: dict[str, str]) -> None:
    result = run(["schema", "--check"], env)
    assert result.returncode == 0, result.stderr
    assert str(SCHEMA_PATH) in result.stdout


def test_schema_out_then_check_then_stale(env: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    assert run(["schema", "--out", str(out)], env).returncode == 0
    assert out.read_text() == SCHEMA_PATH.read_text()
    assert run(["schema", "--out", str(out), "--check"], env).returncode == 0
    out.write_text(out.read_text().replace('"hello"', '"helo"'))
    stale = run(["schema", "--out", str(out), "--check"], env)
    assert stale.returncode == 1 and "stale" in stale.stderr


def test_serve_with_a_missing_model_explains_and_fails(env: dict[str, str], tmp_path: Path) -> None:
    result = run(["serve", "--model", str(tmp_path / "no-such-model"), "--port", "0"], env)
    assert result.returncode == 2
    assert "cannot load model" in result.stderr and "To fix" in result.stderr
    assert "webshepherd dev tiny-model" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_serve_refuses_a_public_bind_without_tls(env: dict[str, str]) -> None:
    result = run(["serve", "--host", "0.0.0.0", "--port", "0"], env)
    assert result.returncode != 0
    assert "TLS" in result.stderr and "Traceback" not in result.stderr


def _wait_for_line(proc: subprocess.Popen[str], pattern: str, timeout: float) -> re.Match[str]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            if proc.poll() is not None:
                break
            continue
        seen.append(line)
        m = re.search(pattern, line)
        if m:
            return m
    raise AssertionError(f"no line matching {pattern!r}; stderr so far:\n{''.join(seen)}")


async def _raw_session(url: str, token: str) -> list[dict[str, Any]]:
    """A whole session in raw JSON, written from protocol.md alone."""
    got: list[dict[str, Any]] = []
    async with connect(url) as ws:

        async def request(msg: dict[str, Any]) -> dict[str, Any]:
            await ws.send(json.dumps(msg))
            while True:
                reply = json.loads(await asyncio.wait_for(ws.recv(), 120))
                got.append(reply)
                if reply.get("id") == msg["id"]:
                    return reply

        welcome = await request(
            {
                "type": "hello",
                "id": "h1",
                "protocol": 1,
                "token": token,
                "client": {"name": "raw", "version": "1", "role": "agent"},
            }
        )
        assert welcome["type"] == "welcome" and welcome["protocol"] == 1
        axtree = "RootWebArea 'Shop', focused\n\t[12] searchbox 'Search products'"
        started = await request(
            {
                "type": "session.start",
                "id": "s1",
                "intent": "Buy the cheapest USB-C cable",
                "start_url": "http://shop.local/",
                "checklist": "Checklist 1: Search for USB-C cables",
                "observation": {"url": "http://shop.local/", "axtree": axtree},
                "agent": {"name": "raw", "planning": "step", "plan": None},
                "source": "agent",
            }
        )
        assert started["type"] == "session.started"
        sid = started["session_id"]
        observed = await request(
            {
                "type": "observe",
                "id": "o1",
                "session_id": sid,
                "url": "http://shop.local/",
                "axtree": axtree,
            }
        )
        assert observed["type"] == "observed"
        scored = await request(
            {
                "type": "score",
                "id": "c1",
                "session_id": sid,
                "samples": 1,
                "approval": "never",
                "candidates": [
                    {"thought": "The search box is [12].", "action": "fill('12', 'usb-c')"},
                    {"thought": "", "action": "click('40')"},
                ],
            }
        )
        assert scored["type"] == "scored", scored
        assert [r["index"] for r in scored["results"]] == [0, 1]
        assert scored["decision"]["status"] == "auto"
        bad = await request({"type": "score", "id": "c2", "session_id": sid, "candidates": []})
        assert bad["type"] == "error" and bad["code"] == "invalid_message"
        action = await request(
            {
                "type": "action",
                "id": "x1",
                "session_id": sid,
                "step": 0,
                "action": "fill('12', 'usb-c')",
                "source": "agent",
            }
        )
        assert action["type"] == "action.recorded"
        ended = await request(
            {
                "type": "session.end",
                "id": "e1",
                "session_id": sid,
                "outcome": "success",
                "answer": "$4.99",
            }
        )
        assert ended["type"] == "session.ended" and ended["outcome"] == "success"
        listed = await request({"type": "sessions.list", "id": "m1"})
        assert [s["session_id"] for s in listed["sessions"]] == [sid]
        history = await request({"type": "session.get", "id": "m2", "session_id": sid})
        assert history["session"]["state"] == "ended"
    return got


@pytest.mark.model
def test_serve_tiny_model_and_run_a_raw_session(env: dict[str, str], tiny_model_path: Path) -> None:
    token = run(["token"], env).stdout.strip()
    proc = subprocess.Popen(
        [
            *WEBSHEPHERD,
            "serve",
            "--model",
            str(tiny_model_path),
            "--port",
            "0",
            "--device",
            "cpu",
            "--samples",
            "1",
        ],
        env=env,
        text=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        m = _wait_for_line(proc, r"listening on (ws://127\.0\.0\.1:\d+/v1)", timeout=180)
        messages = asyncio.run(_raw_session(m.group(1), token))
        assert any(msg["type"] == "checklist" for msg in messages)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert rc == 0
    assert (Path(env["WEBSHEPHERD_DATA_DIR"]) / "webshepherd.sqlite3").exists()


# A base install (`pip install .`): the extras' modules cannot be imported.
_BASE_INSTALL = """
import importlib.abc, sys
EXTRAS = {"torch", "transformers", "rich", "plotext", "keyring", "textual", "pyarrow", "datasets"}
class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in EXTRAS:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NotInstalled())
from webshepherd.daemon.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize(("command", "extra"), [("demo", "daemon")])
def test_a_base_install_names_the_extra_to_install(env, command: str, extra: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _BASE_INSTALL, command],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()  # one line, no traceback
    assert f"`webshepherd {command}` needs" in line
    assert f"pip install '.[{extra}]' in a clone" in line  # not published: no PyPI name


def test_version_prints_the_installed_version(env: dict[str, str]) -> None:
    from importlib import metadata

    done = run(["--version"], env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"webshepherd {metadata.version('webshepherd')}\n"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["srve"], "invalid choice: 'srve' (did you mean 'serve'?)"),
        (["export", "--format", "webpr"], "invalid choice: 'webpr' (did you mean 'webprm'?)"),
        (["export", "--format", "sft", "--quite"], "--quite (did you mean '--quiet'?)"),
        (["dev", "tiny-model", "--qiet"], "--qiet (did you mean '--quiet'?)"),
        (["token", "--rotte=1"], "--rotte=1 (did you mean '--rotate'?)"),
    ],
)
def test_a_mistyped_command_choice_or_flag_gets_a_did_you_mean(
    env: dict[str, str], args: list[str], said: str
) -> None:
    done = run(args, env, timeout=60)
    assert done.returncode == 2
    assert said in done.stderr, done.stderr


def test_a_word_like_nothing_known_gets_no_guess(env: dict[str, str]) -> None:
    done = run(["token", "--zzzzzz"], env, timeout=60)
    assert done.returncode == 2
    assert "unrecognized arguments: --zzzzzz\n" in done.stderr
    assert "did you mean" not in done.stderr


def test_the_integrations_commands_without_their_install_name_make_setup_integrations(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``blame`` and ``label`` come through the ``webshepherd.commands`` entry points; without
    BrowserGym (this venv), or without the entry points, one line says what installs them."""
    import importlib.util

    import webshepherd.daemon.cli as cli

    if importlib.util.find_spec("gymnasium") is not None:
        pytest.skip("BrowserGym is installed here: tests/integrations/test_commands.py runs it")
    args = ["blame", "s1", "--agent", "m:f", "--no-record", "--data-dir", str(tmp_path)]
    assert cli.main(args) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("webshepherd: `webshepherd blame` needs gymnasium"), line
    assert "`make setup-integrations`" in line
    monkeypatch.setattr(cli, "plugin_commands", lambda: [])
    for command in ("blame", "label"):
        with pytest.raises(SystemExit) as exited:
            cli.main([command, "s1"])
        assert exited.value.code == 2
        said = capsys.readouterr().err.splitlines()[-1]
        assert f"`webshepherd {command}` comes with the integrations, not installed here" in said
        assert "`make setup-integrations`" in said
