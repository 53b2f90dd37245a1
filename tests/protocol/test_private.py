"""Owner-only folders and files (issue 49): the config dir is 0700 whichever command makes it
first (``serve``, whose starting marker is 0600; ``pair``; ``token``), under the usual umask,
in a fresh home; an existing open one is narrowed, a shared (sticky) one is left alone."""

from __future__ import annotations

import os
import pty
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from webshepherd.protocol.private import private_dir, write_private

from tests.fixtures.poll import until_sync
from tests.fixtures.ports import closed_port


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_folder_is_0700_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        made = private_dir(tmp_path / "a" / "config")
    finally:
        os.umask(old)
    assert made == tmp_path / "a" / "config" and _mode(made) == 0o700


def test_an_open_folder_is_narrowed_and_a_sticky_one_left(tmp_path: Path) -> None:
    open_ = tmp_path / "open"
    open_.mkdir()
    open_.chmod(0o755)
    assert _mode(private_dir(open_)) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    assert _mode(private_dir(shared)) == 0o1777


def test_a_private_file_is_0600_even_over_an_open_leftover(tmp_path: Path) -> None:
    path = tmp_path / "config" / "token"
    private_dir(path.parent)
    leftover = path.with_name("token.tmp")
    leftover.write_text("old")
    leftover.chmod(0o644)
    assert write_private(path, "secret\n") == path
    assert path.read_text() == "secret\n" and _mode(path) == 0o600
    assert not leftover.exists() and _mode(path.parent) == 0o700


def _home_env(tmp_path: Path) -> dict[str, str]:
    """A fresh home: the config dir is platformdirs' (``$XDG_CONFIG_HOME/webshepherd``)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("WEBSHEPHERD_CONFIG_DIR", "WEBSHEPHERD_TOKEN", "WEBSHEPHERD_DATA_DIR")
    }
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "home" / ".config"),
        XDG_DATA_HOME=str(tmp_path / "home" / ".local" / "share"),
        WEBSHEPHERD_KEYRING="0",
        HF_HUB_OFFLINE="1",
    )
    return env


@pytest.mark.parametrize("command", ["serve", "pair", "token"])
def test_the_config_dir_is_0700_whoever_makes_it_first(
    command: str, tmp_path: Path, tiny_model_path: Path
) -> None:
    env = _home_env(tmp_path)
    config = tmp_path / "home" / ".config" / "webshepherd"
    cli = [sys.executable, "-m", "webshepherd.daemon.cli"]
    if command == "token":
        done = subprocess.run(
            [*cli, "token"], env=env, umask=0o022, capture_output=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert _mode(config / "token") == 0o600
    elif command == "pair":  # a code is made only at a terminal: a pty stands in for it
        main, replica = pty.openpty()
        try:
            done = subprocess.run(
                [*cli, "pair", "extension"],
                env=env,
                umask=0o022,
                stdin=replica,
                capture_output=True,
                timeout=120,
            )
        finally:
            os.close(main)
            os.close(replica)
        assert done.returncode == 0, done.stderr
        assert _mode(config / "pairing-codes.json") == 0o600
    else:  # serve marks its port as starting before anything else writes there
        port = closed_port()
        args = ["--model", str(tiny_model_path), "--device", "cpu", "--port", str(port)]
        proc = subprocess.Popen(
            [*cli, "serve", *args],
            env=env,
            umask=0o022,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            marker = config / f"serve-{port}.starting"
            until_sync(marker.exists, 120, "serve's starting marker")
            assert _mode(marker) == 0o600
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    assert _mode(config) == 0o700
