"""``build_daemon`` and friends: the daemon built from Settings, on loopback, with the tiny
judge (nothing here depends on what the judge writes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from webshepherd.daemon.build import build_daemon, build_engine, running_daemon
from webshepherd.daemon.config import ModelSettings, Settings
from webshepherd.daemon.engine.engine import Engine, EngineConfig
from webshepherd.protocol.errors import ModelUnavailableError, WebShepherdError
from websockets.asyncio.client import connect

from tests.fixtures.ports import closed_port


def _hello(token: str) -> str:
    client = {"name": "test", "version": "1", "role": "agent"}
    return json.dumps({"type": "hello", "id": "h", "protocol": 1, "token": token, "client": client})


async def test_running_daemon_serves_the_settings_and_stops(
    tmp_path: Path, daemon_engine: Engine
) -> None:
    settings = Settings.local(tmp_path, default_samples=3)
    async with running_daemon(settings, daemon_engine) as server:
        assert server.config is settings.daemon and server.engine is daemon_engine
        assert server.port != 0 and server.url.startswith("ws://127.0.0.1:")
        async with connect(server.url) as ws:
            await ws.send(_hello(settings.daemon.token or ""))
            welcome = json.loads(await ws.recv())
        assert welcome["type"] == "welcome", welcome
        url = server.url
    assert (tmp_path / "data" / "webshepherd.sqlite3").exists()  # recorded under the workdir
    with pytest.raises(OSError):
        async with connect(url, open_timeout=2):
            pass


def test_local_settings_are_loopback_on_a_free_port_with_a_fresh_token(tmp_path: Path) -> None:
    one, two = Settings.local(tmp_path), Settings.local(tmp_path, queue_limit=2)
    assert (one.daemon.host, one.daemon.port) == ("127.0.0.1", 0)
    assert one.daemon.data_dir == tmp_path / "data"
    assert one.daemon.config_dir == tmp_path / "config"
    assert one.daemon.token and two.daemon.token and one.daemon.token != two.daemon.token
    assert two.daemon.queue_limit == 2 and one.engine == EngineConfig()
    assert one.with_daemon(port=9).daemon.port == 9 and one.daemon.port == 0


def test_build_daemon_refuses_an_open_bind_without_tls(
    tmp_path: Path, daemon_engine: Engine
) -> None:
    settings = Settings.local(tmp_path, host="0.0.0.0")
    with pytest.raises(WebShepherdError, match="non-loopback address needs a TLS"):
        build_daemon(settings, daemon_engine)


@pytest.mark.parametrize(
    ("model", "engine", "message"),
    [
        (
            ModelSettings(options={"base_url": "http://127.0.0.1:9/v1"}),
            None,
            "only apply to --backend openai",
        ),
        (
            ModelSettings(options={"vllm_memory": 0.5}),
            None,
            "--vllm-memory only applies to --backend vllm",
        ),
        (ModelSettings(), EngineConfig(max_context=-3), "--max-context: a number of tokens"),
        (
            ModelSettings(
                backend="openai", options={"base_url": "http://h/v1", "api_key_env": "WS_NO_SUCH"}
            ),
            None,
            "WS_NO_SUCH: that environment variable is not set",
        ),
    ],
)
def test_build_engine_refuses_settings_that_do_not_fit(
    model: ModelSettings,
    engine: EngineConfig | None,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("WS_NO_SUCH", raising=False)
    settings = Settings.local(tmp_path, engine=engine, model=model)
    with pytest.raises(ModelUnavailableError, match=message):
        build_engine(settings)


def test_build_daemon_loads_the_named_model_when_given_none(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    settings = Settings.local(
        tmp_path, model=ModelSettings(backend="openai", options={"base_url": url, "server_wait": 0})
    )
    with pytest.raises(ModelUnavailableError, match="cannot reach the model server"):
        build_daemon(settings)


@pytest.mark.model
def test_build_engine_loads_the_model_with_the_engine_settings(
    tmp_path: Path, tiny_model_path: Path
) -> None:
    model = ModelSettings(model=str(tiny_model_path), device="cpu")
    engine = build_engine(
        Settings.local(
            tmp_path, engine=EngineConfig(max_new_tokens=7, unparsed="zero"), model=model
        )
    )
    try:
        assert (engine.config.max_new_tokens, engine.config.unparsed) == (7, "zero")
        assert engine.config.judge_inputs == "text"  # what the text checkpoint was trained on
    finally:
        engine.close()
