"""``webshepherd pair`` in a subprocess: no code without a terminal (a pty stands in for the
person's), a code that pairs the extension against a real daemon, ``pair tui`` that pairs the
TUI at once, ``--list`` and ``--revoke``."""

from __future__ import annotations

import asyncio
import os
import pty
import re
import stat
import sys
from pathlib import Path

from webshepherd.daemon.server.approvers import Approvers
from webshepherd.tui.credential import credential_path

from tests.fixtures.daemon import TEST_TOKEN, hello

CODE = re.compile(r"Pairing code: (\d{4}-\d{4})")


def pair_env(config_dir: Path, url: str = "") -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        WEBSHEPHERD_CONFIG_DIR=str(config_dir),
        WEBSHEPHERD_TOKEN=TEST_TOKEN,
        WEBSHEPHERD_KEYRING="0",
        WEBSHEPHERD_URL=url,
    )
    return env


async def pair(config_dir: Path, *args: str, tty: bool, url: str = "") -> tuple[int, str, str]:
    """Run ``webshepherd pair ARGS``: stdin a pty (a person's terminal) or /dev/null."""
    if tty:
        main, replica = pty.openpty()
        stdin: int = replica
    else:
        main = replica = -1
        stdin = os.open(os.devnull, os.O_RDONLY)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "webshepherd.daemon.cli",
            "pair",
            *args,
            stdin=stdin,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=pair_env(config_dir, url),
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        os.close(stdin)
        if main != -1:
            os.close(main)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_no_code_without_a_terminal(tmp_path: Path) -> None:
    for args in (("extension",), ("tui",), ("--revoke", "abcd")):
        rc, out, err = await pair(tmp_path, *args, tty=False)
        assert rc == 1 and out == ""
        assert "only at a terminal (stdin is not a TTY)" in err, err
        assert "never an agent" in err
    assert not (tmp_path / "pairing-codes.json").exists()


async def test_the_extensions_code_pairs_once(daemon) -> None:
    config_dir = daemon.config.config_dir
    rc, out, err = await pair(config_dir, "extension", "--name", "laptop", tty=True)
    assert rc == 0, err
    code = CODE.search(out)
    assert code is not None, out
    assert "options page" in out and "Pair as a person" in out
    codes = Approvers(config_dir).codes_path
    assert stat.S_IMODE(codes.stat().st_mode) == 0o600
    assert code.group(1).replace("-", "") not in codes.read_text()
    c = await daemon.client(role="extension", name="webshepherd-extension", paired=False)
    paired = await c.request({"type": "pair", "code": code.group(1), "name": "ext"})
    assert (paired["type"], paired["role"], paired["name"]) == ("paired", "extension", "laptop")

    rc, out, _ = await pair(config_dir, "--list", tty=False)
    assert rc == 0 and "extension" in out and "laptop" in out
    (entry,) = Approvers(config_dir).paired()
    assert out.startswith(entry.id)
    rc, out, err = await pair(config_dir, "--revoke", entry.id, tty=True)
    assert rc == 0 and "revoked" in out, err
    refused = await (await daemon.raw()).request(hello("extension", "x", paired["credential"]))
    assert refused["code"] == "unauthorized"


async def test_pair_tui_pairs_the_tui_at_once(daemon) -> None:
    config_dir = daemon.config.config_dir
    rc, out, err = await pair(config_dir, "tui", tty=True, url=daemon.url)
    assert rc == 0, err
    assert "Paired the TUI as monitor:tui" in out
    path = credential_path(config_dir)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    credential = path.read_text().strip()
    welcome = await (await daemon.raw()).request(hello("monitor", "webshepherd-tui", credential))
    assert (welcome["role"], welcome["approver"]) == ("monitor", True)
    (entry,) = Approvers(config_dir).paired()
    assert (entry.role, entry.name) == ("monitor", "tui")


async def test_pair_tui_without_a_daemon_says_so(tmp_path: Path) -> None:
    rc, _, err = await pair(tmp_path, "tui", tty=True, url="ws://127.0.0.1:9/v1")
    assert rc == 1 and "cannot reach the webshepherd daemon" in err
    assert not credential_path(tmp_path).exists()
