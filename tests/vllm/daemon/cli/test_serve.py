"""``webshepherd serve --backend vllm`` started exactly as the README writes it (its own line,
read from README.md, run by a shell in this venv as ``activate`` sets it up), then scored
through the SDK: no ``--max-context`` (the default 10000 is more than the tiny judge's 4096
positions, so the context must come down to the model's), no ``--dtype``, no memory flag."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from webshepherd.protocol.client.sync import Client
from webshepherd.protocol.common import Observation
from webshepherd.protocol.version import DEFAULT_HOST, DEFAULT_PORT, DEFAULT_URL

pytestmark = [pytest.mark.model, pytest.mark.timeout(2000)]

ROOT = Path(__file__).resolve().parents[4]
TOKEN = "test-token-readme-vllm-0123456789"
START_S = 1500  # vLLM compiles the model at start: minutes, many on a loaded 2-core machine
TREE = "RootWebArea 'Shop', focused\n\t[2] searchbox 'Search'\n" + "\n".join(
    f"\t[{10 + i}] link 'Cable {i}'" for i in range(12)
)
CANDIDATES = [("Search for the cable.", "fill('2', 'usb-c cable')"), ("Scroll.", "scroll(0, 300)")]


def readme_command() -> str:
    lines = re.findall(
        r"^webshepherd serve --backend vllm .*$", (ROOT / "README.md").read_text(), re.M
    )
    assert len(lines) == 1, (
        f"README.md: expected one `webshepherd serve --backend vllm` line: {lines}"
    )
    return lines[0]


def port_free(host: str, port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex((host, port)) != 0


def test_serve_backend_vllm_as_the_readme_writes_it(tmp_path: Path, tiny_model_path: Path) -> None:
    command = readme_command()
    assert "--max-context" not in command and "--dtype" not in command
    if not port_free(DEFAULT_HOST, DEFAULT_PORT):
        pytest.fail(f"port {DEFAULT_PORT} is taken: the README's command serves there; stop it")
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",  # as activate sets it
        "VIRTUAL_ENV": str(Path(bin_dir).parent),
        "WEBSHEPHERD_DATA_DIR": str(tmp_path / "data"),
        "WEBSHEPHERD_CONFIG_DIR": str(tmp_path / "config"),
        "WEBSHEPHERD_TOKEN": TOKEN,
    }
    proc = subprocess.Popen(
        ["bash", "-c", command],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    out: list[str] = []
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        deadline = time.monotonic() + START_S
        while not any("model loaded" in line for line in out):
            assert proc.poll() is None, "serve exited:\n" + "".join(out[-30:])
            assert time.monotonic() < deadline, "serve did not load in time:\n" + "".join(out[-30:])
            time.sleep(1)
        while port_free(DEFAULT_HOST, DEFAULT_PORT):
            assert proc.poll() is None, "serve exited:\n" + "".join(out[-30:])
            assert time.monotonic() < deadline, "serve did not listen in time"
            time.sleep(0.5)
        assert f"loading {tiny_model_path} (vllm" in "".join(out)
        with Client(DEFAULT_URL, TOKEN) as client:
            session = client.start_session(
                "Buy a USB-C cable",
                checklist="Checklist 1: Search for a USB-C cable\nChecklist 2: Buy one",
                observation=Observation(url="http://shop.local/", axtree=TREE),
            )
            scored = session.score(CANDIDATES, samples=1)
            session.end("success")
        assert len(scored.results) == len(CANDIDATES)
        assert any(r.reward is not None for r in scored.results), scored
        assert all(r.probabilities == "top_k" for r in scored.results)
        # the context came down to the tiny judge's positions (serve logs it)
        assert "has 4096 positions: the context is 4096, not 10000" in "".join(out)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
