"""A client started before its daemon (``webshepherd serve … &`` then the agent at once)
waits for it while a ``serve`` has marked the address as starting: no token file yet, nothing
listening yet. A real daemon (scripted judge) comes up on the address the client waits on once
the client has said it waits. With nothing starting, the client fails at once."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.client.wait import (
    daemon_starting,
    not_up_yet,
    starting_marker,
    until_daemon,
)
from webshepherd.protocol.errors import (
    ConnectionLostError,
    ProtocolError,
    UnauthorizedError,
)
from webshepherd.protocol.token_store import TokenStore

from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.poll import until
from tests.fixtures.ports import closed_port
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon

WAITING = "waiting for the daemon at"


def waits_said(caplog: pytest.LogCaptureFixture) -> int:
    return sum(WAITING in r.getMessage() for r in caplog.records)


@pytest.fixture(autouse=True)
def _config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "config"
    monkeypatch.setenv("WEBSHEPHERD_CONFIG_DIR", str(config))
    return config


async def test_a_client_started_first_connects_once_the_daemon_is_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = closed_port()
    url = f"ws://127.0.0.1:{port}/v1"
    with (
        starting_marker(url),  # as `webshepherd serve` marks it before loading its model
        caplog.at_level(logging.WARNING, logger="webshepherd.client"),
    ):
        client = AsyncClient(url, TEST_TOKEN, reconnect=False)
        connecting = asyncio.create_task(client.connect())
        await until(lambda: waits_said(caplog) == 1, what="the client saying it waits")
        async with scripted_daemon(tmp_path, ScriptedJudge({}), port=port):
            welcome = await connecting
            assert welcome.type == "welcome"
            await client.close()
    assert waits_said(caplog) == 1  # said once, however many tries


async def test_no_token_file_yet_is_waited_for(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    _config_dir: Path,
) -> None:
    config = _config_dir
    monkeypatch.delenv("WEBSHEPHERD_TOKEN", raising=False)
    async with scripted_daemon(tmp_path, ScriptedJudge({})) as server:
        with (
            starting_marker(server.url),
            caplog.at_level(logging.WARNING, logger="webshepherd.client"),
        ):
            client = AsyncClient(server.url, reconnect=False)  # the token from the store
            connecting = asyncio.create_task(client.connect())
            await until(lambda: waits_said(caplog) == 1, what="the client saying it waits")
            TokenStore(config).write(TEST_TOKEN)  # as `webshepherd serve` does when it starts
            assert (await connecting).type == "welcome"
            await client.close()


async def test_it_gives_up_with_the_clear_error() -> None:
    url = f"ws://127.0.0.1:{closed_port()}/v1"
    client = AsyncClient(url, TEST_TOKEN, reconnect=False, daemon_wait_s=0.5)
    with starting_marker(url), pytest.raises(ConnectionLostError, match="webshepherd serve"):
        await client.connect()


async def test_with_no_daemon_starting_it_fails_at_once(caplog: pytest.LogCaptureFixture) -> None:
    url = f"ws://127.0.0.1:{closed_port()}/v1"
    client = AsyncClient(url, TEST_TOKEN, reconnect=False)  # the default wait: minutes
    started = asyncio.get_running_loop().time()
    with (
        caplog.at_level(logging.WARNING, logger="webshepherd.client"),
        pytest.raises(ConnectionLostError, match="start it with `webshepherd serve`"),
    ):
        await client.connect()
    assert asyncio.get_running_loop().time() - started < 10 and waits_said(caplog) == 0


def test_a_marker_counts_only_while_its_serve_lives(_config_dir: Path) -> None:
    url = f"ws://127.0.0.1:{closed_port()}/v1"
    assert not daemon_starting(url)
    with starting_marker(url):
        assert daemon_starting(url)
        assert not daemon_starting("ws://127.0.0.1:1/v1")  # another port: not this serve
    assert not daemon_starting(url)  # removed when serve stops
    port = url.split(":")[2].split("/")[0]
    dead = _config_dir / f"serve-{port}.starting"
    dead.write_text(json.dumps({"pid": 999_999_999, "url": url}), "utf-8")  # a serve that died
    assert not daemon_starting(url)


async def test_a_refusal_is_raised_at_once(caplog: pytest.LogCaptureFixture) -> None:
    tries = 0

    async def refused() -> None:
        nonlocal tries
        tries += 1
        raise UnauthorizedError("hello: the token is not this daemon's")

    with (
        caplog.at_level(logging.WARNING, logger="webshepherd.client"),
        pytest.raises(UnauthorizedError, match="not this daemon's"),
    ):
        await until_daemon(refused, "ws://127.0.0.1:1/v1", 30.0, starting=lambda _: True)
    assert tries == 1 and waits_said(caplog) == 0


def test_what_counts_as_not_up_yet() -> None:
    assert not_up_yet(ConnectionLostError("cannot reach", retryable=True))
    assert not not_up_yet(ConnectionLostError("the client was closed", retryable=False))
    assert not_up_yet(UnauthorizedError("no pairing token found: start the daemon once"))
    assert not not_up_yet(UnauthorizedError("token refused"))
    assert not not_up_yet(ProtocolError("bad frame"))
