"""The connection under AsyncClient (its socket, reader, calls and reconnecting are tested
through AsyncClient in test_async_client.py and test_wait.py over a real daemon; its reaping in
tests/protocol/test_tasks.py): here, that a URL no daemon serves (the
wrong path, an http:// scheme) fails at once, naming the daemon's ``/v1``, and that a killed
daemon fails a waiting call and the next one fast, naming it."""

from __future__ import annotations

import asyncio
import logging
import signal
from pathlib import Path

import pytest
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.client.connection import checked_url
from webshepherd.protocol.client.wait import starting_marker
from webshepherd.protocol.commits import held_request
from webshepherd.protocol.errors import ConnectionLostError, WebShepherdError

from tests.fixtures.daemon import OBS, REFERENCE, TEST_TOKEN, pairing_code
from tests.fixtures.ports import closed_port
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon
from tests.fixtures.serve_process import serve_process

WAITING = "waiting for the daemon at"


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


async def test_a_killed_daemon_fails_a_paused_call_and_the_next_one_fast(
    tmp_path: Path, tiny_model_path: Path
) -> None:
    """Fail closed (issue 49): a ``commit.check`` waiting for a person when the daemon is killed
    with SIGKILL raises ConnectionLostError naming the daemon and how it went, and the next
    call raises too, naming it gone, instead of waiting for a reconnect for 30 s. (10 s is a
    hang guard under load; bench/daemon_gone.py measures the times.)"""
    data, port = tmp_path / "data", closed_port()
    proc = await serve_process(tiny_model_path, data, port)
    url = f"ws://127.0.0.1:{port}/v1"
    person = AsyncClient(url, TEST_TOKEN, role="monitor", name="tui")
    agent = AsyncClient(url, TEST_TOKEN)
    try:
        await person.connect()
        await person.pair(pairing_code(data / "config", "monitor"), "tui")
        asked = await person.subscribe("*").start()
        await agent.connect()
        session = await agent.start_session(
            "Buy a cable", observation=OBS, checklist=REFERENCE, holds="browser"
        )
        post = held_request("POST", "http://shop.test/orders", "write", page_url=OBS["url"])
        paused = asyncio.create_task(session.commit_check(post, timeout=120))
        while (await asked.get(timeout=30)).type != "approval.request":
            pass
        assert not paused.done()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        with pytest.raises(ConnectionLostError) as lost:
            await asyncio.wait_for(paused, 10)
        assert lost.value.message.startswith(f"connection to the webshepherd daemon at {url} lost")
        assert "the daemon was killed or the network dropped" in lost.value.message
        with pytest.raises(ConnectionLostError) as gone:
            await asyncio.wait_for(session.commit_check(post, timeout=120), 10)
        assert gone.value.message.startswith(f"the webshepherd daemon at {url} is gone")
        assert gone.value.retryable and "(the last try: " in gone.value.message
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        await agent.close()
        await person.close()


async def test_a_checklist_the_judge_failed_is_the_score_s_reason_not_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The judge writes no checklist (the scripted judge fails it): the daemon tells the
    session's owner, and the score answers without a reward, saying why. The caller handles
    that result, so the client logs no warning of its own."""
    observation = {"url": "http://shop.test/", "axtree": "RootWebArea 'Shop'\n\t[12] button 'Buy'"}
    async with (
        scripted_daemon(tmp_path, ScriptedJudge({})) as server,
        AsyncClient(server.url, TEST_TOKEN) as client,
    ):
        with caplog.at_level(logging.DEBUG, logger="webshepherd.protocol.client"):
            session = await client.start_session("Buy it", observation=observation)
            scored = await session.score(["click('12')"])
    (result,) = scored.results
    assert result.reward is None and "no checklist it could parse" in result.feedback
    client_log = [r for r in caplog.records if r.name.startswith("webshepherd.protocol.client")]
    said = [r for r in client_log if r.getMessage().startswith("daemon error model_error")]
    assert said and all(r.levelno == logging.DEBUG for r in said), client_log
    assert not [r for r in client_log if r.levelno >= logging.WARNING], client_log


async def test_a_daemon_gone_silent_fails_a_paused_call_by_the_keepalive(
    tmp_path: Path, tiny_model_path: Path
) -> None:
    """A daemon that stops answering without closing its socket (SIGSTOP stands in for a hung
    host or a cut network): the client's pings go unanswered and the waiting ``commit.check``
    raises ConnectionLostError (by the keepalive, in about 10 s: bench/daemon_gone.py; 60 s is
    a hang guard, not a timing)."""
    data, port = tmp_path / "data", closed_port()
    proc = await serve_process(tiny_model_path, data, port)
    url = f"ws://127.0.0.1:{port}/v1"
    person = AsyncClient(url, TEST_TOKEN, role="monitor", name="tui")
    agent = AsyncClient(url, TEST_TOKEN)
    try:
        await person.connect()
        await person.pair(pairing_code(data / "config", "monitor"), "tui")
        asked = await person.subscribe("*").start()
        await agent.connect()
        session = await agent.start_session(
            "Buy a cable", observation=OBS, checklist=REFERENCE, holds="browser"
        )
        post = held_request("POST", "http://shop.test/orders", "write", page_url=OBS["url"])
        paused = asyncio.create_task(session.commit_check(post, timeout=600))
        while (await asked.get(timeout=30)).type != "approval.request":
            pass
        proc.send_signal(signal.SIGSTOP)
        with pytest.raises(ConnectionLostError) as lost:
            await asyncio.wait_for(paused, 60)
        assert lost.value.message.startswith(f"connection to the webshepherd daemon at {url} lost")
    finally:
        proc.kill()
        proc.wait()
        await agent.close()
        await person.close()
