"""The release (issue 42.4): a wheel and an sdist build from the tree, and the wheel's light
install (no extras) in a fresh venv is a working SDK: it talks to a real daemon on loopback,
and its command says its version. Nothing here touches the project's own venvs."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon

REPO = Path(__file__).resolve().parents[1]

SDK_SCRIPT = """
import sys
from webshepherd.protocol.client.sync import Client

with Client(sys.argv[1], sys.argv[2]) as client:
    obs = {"url": "http://shop.test/", "axtree": "[1] RootWebArea 'Shop'\\n\\t[2] button 'Buy'"}
    session = client.start_session("Buy the lamp", checklist="Checklist 1: Buy the lamp",
                                   observation=obs)
    scored = session.score([("Buy it.", "click('2')")], approval="never")
    print("reward", scored.results[0].reward)
    session.end("success")
"""


def _run(*args: str | Path, timeout: float = 600) -> str:
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # no --sdist --wheel: the wheel is built from the sdist (which must then be whole), in a
    # temporary folder, leaving no build/ output in the tree
    _run(sys.executable, "-m", "build", "--outdir", out, REPO)
    return out


def test_the_wheel_and_the_sdist_hold_the_packages_and_the_tiny_judge(dist: Path) -> None:
    (wheel,) = dist.glob("webshepherd-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for module in (
        "webshepherd/protocol/client/sync.py",
        "webshepherd/protocol/commits.py",
        "webshepherd/daemon/cli/__init__.py",
        "webshepherd/tui/__init__.py",
        "webshepherd/integrations/commit_gate.py",
    ):
        assert module in names, module
    assert any(n.startswith("webshepherd/daemon/dev/tiny_judge/") for n in names)
    assert not any(n.startswith(("tests/", "extension/node_modules/")) for n in names)
    (sdist,) = dist.glob("webshepherd-*.tar.gz")
    with tarfile.open(sdist) as tar:
        members = tar.getnames()
    assert any(m.endswith("/setup.py") for m in members)
    assert any(m.endswith("/protocol/commits.py") for m in members)


def test_the_light_install_from_the_wheel_is_a_working_sdk(dist: Path, tmp_path: Path) -> None:
    (wheel,) = dist.glob("webshepherd-*.whl")
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", wheel)
    # the light install: the wire models and the SDK, no torch, no transformers
    listed = _run(python, "-m", "pip", "list", "--format=freeze").lower()
    assert "webshepherd==" in listed and "torch==" not in listed
    assert "webshepherd" in _run(env / "bin" / "webshepherd", "--version")

    async def score_through_the_wheel() -> str:
        async with scripted_daemon(tmp_path / "d", ScriptedJudge({}, (0.75, (2,), "Good."))) as s:
            proc = await asyncio.create_subprocess_exec(
                str(python), "-c", SDK_SCRIPT, s.url, TEST_TOKEN,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            out, err = await asyncio.wait_for(proc.communicate(), 120)
            assert proc.returncode == 0, err.decode()[-3000:]
            return out.decode()

    assert "reward 0.75" in asyncio.run(score_through_the_wheel())
