"""The connection under AsyncClient (its socket, reader, calls and reconnecting are tested
through AsyncClient in test_async_client.py and test_wait.py over a real daemon): here, that
closing it never swallows the caller's own cancellation, and that a URL no daemon serves (the
wrong path, an http:// scheme) fails at once, naming the daemon's ``/v1``."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.client.connection import checked_url, reap
from webshepherd.protocol.client.wait import starting_marker
from webshepherd.protocol.errors import ConnectionLostError, WebShepherdError

from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon

WAITING = "waiting for the daemon at"


async def test_reap_waits_for_a_cancelled_task_and_an_errored_one() -> None:
    async def forever() -> None:
        await asyncio.Event().wait()

    async def fails() -> None:
        raise RuntimeError("boom")

    task = asyncio.create_task(forever())
    await asyncio.sleep(0)
    task.cancel()
    await reap(task)  # its own cancellation: done, nothing raised
    assert task.cancelled()
    broken = asyncio.create_task(fails())
    await reap(broken)
    assert isinstance(broken.exception(), RuntimeError)


async def test_a_cancelled_caller_is_not_swallowed_by_reap() -> None:
    """Ctrl-C (or a timeout) while a client closes: the closing task still stops."""
    inner = asyncio.create_task(asyncio.Event().wait())
    reaper = asyncio.create_task(reap(inner))
    await asyncio.sleep(0)
    reaper.cancel()  # the caller is cancelled while it waits; inner is cancelled with it
    with pytest.raises(asyncio.CancelledError):
        await reaper
    assert reaper.cancelled()


@pytest.mark.parametrize("path", ["/", "", "/v2", "/v1/extra"])
async def test_the_wrong_path_fails_at_once_naming_v1(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A running ``serve`` keeps its address marked as starting (the client would wait up to
    180 s for one that is not up yet): the daemon's HTTP 404 is not "not up yet"."""
    monkeypatch.setenv("WEBSHEPHERD_CONFIG_DIR", str(tmp_path / "config"))
    async with scripted_daemon(tmp_path, ScriptedJudge({})) as server:
        base = server.url.removesuffix("/v1")
        wrong = base + path
        client = AsyncClient(wrong, TEST_TOKEN, reconnect=False)  # the default wait: minutes
        with (
            starting_marker(server.url),
            caplog.at_level(logging.WARNING, logger="webshepherd.client"),
            pytest.raises(ConnectionLostError) as info,
        ):
            await asyncio.wait_for(client.connect(), 60)  # a hang guard, not a timing
        await client.close()
    assert info.value.message == (
        f"wrong path: {wrong} is not the daemon's address (HTTP 404); the daemon serves {base}/v1"
    )
    assert not info.value.retryable
    assert not any(WAITING in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("url", "right"),
    [
        ("http://127.0.0.1:8765/v1", "ws://127.0.0.1:8765/v1"),
        ("https://shepherd.example:9000/", "wss://shepherd.example:9000/v1"),
        ("127.0.0.1:8765", "ws://127.0.0.1:8765/v1"),
    ],
)
async def test_an_http_url_is_refused_before_connecting(
    url: str, right: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEBSHEPHERD_CONFIG_DIR", str(tmp_path / "config"))
    with starting_marker(url), pytest.raises(WebShepherdError) as info:
        await AsyncClient(url, TEST_TOKEN, reconnect=False).connect()
    assert info.value.message.startswith(f"not a daemon address: {url!r}")
    assert info.value.message.endswith(f"the daemon speaks WebSocket at {right}")


def test_a_daemon_url_passes_as_it_is() -> None:
    for url in ("ws://127.0.0.1:8765/v1", "wss://shepherd.example/v1", "ws://[::1]:8765/v1"):
        assert checked_url(url) == url
    with pytest.raises(WebShepherdError, match="not a daemon address"):
        checked_url("ws://127.0.0.1:99999/v1")
