"""Loading an engine on each backend, and the errors that say how to fix a failed load."""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from webshepherd.daemon.dev.openai_server import OpenAIServer
from webshepherd.daemon.engine.backends.model_files import model_positions
from webshepherd.daemon.engine.backends.openai_backend import OpenAIBackend
from webshepherd.daemon.engine.backends.openai_loading import (
    api_root,
    load_openai_backend,
    probe_models,
)
from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend
from webshepherd.daemon.engine.backends.vllm_loading import load_vllm_backend, vllm_reason
from webshepherd.daemon.engine.engine import Engine
from webshepherd.daemon.engine.loader import load_engine
from webshepherd.protocol.errors import ModelUnavailableError

from tests.fixtures.ports import closed_port

KEY = "sk-loader-test"
HAS_VLLM = importlib.util.find_spec("vllm") is not None


@pytest.fixture(scope="module")
def server(tiny_engine: Engine) -> Iterator[OpenAIServer]:
    base = tiny_engine.backend
    assert isinstance(base, TransformersBackend)
    renamed = TransformersBackend(base.model, base.tokenizer, "served-tiny")
    renamed._lock = base._lock  # one model, one lock
    s = OpenAIServer(renamed, "127.0.0.1", 0, api_key=KEY)
    s.start()
    yield s
    s.stop()


def test_api_root_adds_the_version_path() -> None:
    assert api_root("http://127.0.0.1:8000") == "http://127.0.0.1:8000/v1"
    assert api_root(" http://h:1/v1/ ") == "http://h:1/v1"
    assert api_root("https://gw.example/openai/v1") == "https://gw.example/openai/v1"
    with pytest.raises(ModelUnavailableError, match="not an http"):
        api_root("127.0.0.1:8000")


@pytest.mark.model
def test_openai_engine_on_the_projects_own_endpoint(
    server: OpenAIServer, tiny_model_path: Path
) -> None:
    engine = load_engine(str(tiny_model_path), backend="openai", base_url=server.url, api_key=KEY)
    backend = engine.backend
    assert isinstance(backend, OpenAIBackend) and engine.backend_name == "openai"
    assert backend.model_id == "served-tiny"  # --model names no served model: the only one
    assert backend.tokenizer is not None  # --model still gives the chat template
    config = json.loads((tiny_model_path / "config.json").read_text("utf-8"))
    assert backend.max_context == config["max_position_embeddings"]  # the server's max_model_len
    assert backend.base_url == server.url


@pytest.mark.model
def test_openai_load_errors_say_what_to_fix(server: OpenAIServer, tiny_model_path: Path) -> None:
    tiny = str(tiny_model_path)
    with pytest.raises(ModelUnavailableError, match="--base-url"):
        load_engine(tiny, backend="openai")
    with pytest.raises(ModelUnavailableError, match="cannot reach the model server"):
        load_openai_backend(tiny, base_url=f"http://127.0.0.1:{closed_port()}/v1", server_wait=0)
    with pytest.raises(ModelUnavailableError, match=r"HTTP 401.*--api-key-env"):
        load_openai_backend(tiny, base_url=server.url)
    with pytest.raises(ModelUnavailableError, match=r"does not serve 'other'.*served-tiny"):
        load_openai_backend(tiny, base_url=server.url, api_key=KEY, remote_model="other")
    with pytest.raises(ModelUnavailableError, match="unknown backend 'tgi'"):
        load_engine(tiny, backend="tgi")


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed here")
def test_vllm_backend_without_vllm_says_how_to_install_it(tiny_model_path: Path) -> None:
    with pytest.raises(ModelUnavailableError, match=r"pip install '\.\[gpu\]'"):
        load_engine(str(tiny_model_path), backend="vllm")


def test_vllm_options_are_checked_before_vllm_is_needed() -> None:
    """vLLM runs on CUDA or on its CPU build (tests/vllm/ load it for real, in .venv-vllm)."""
    with pytest.raises(ModelUnavailableError, match=r"--vllm-memory 1.5: a fraction"):
        load_vllm_backend("m", memory_fraction=1.5)
    with pytest.raises(ModelUnavailableError, match="not on device 'mps'"):
        load_vllm_backend("m", device="mps")
    from webshepherd.daemon.cli import build_parser
    from webshepherd.daemon.cli.serve import config_from_args, engine_from_args

    args = build_parser().parse_args(["serve", "--model", "m", "--vllm-memory", "0.2"])
    with pytest.raises(ModelUnavailableError, match="--vllm-memory only applies to --backend vllm"):
        engine_from_args(args, config_from_args(args))
    with pytest.raises(ModelUnavailableError, match=r"--dtype float64: one of auto, float32"):
        load_vllm_backend("m", dtype="float64")
    args = build_parser().parse_args(["serve", "--model", "m", "--dtype", "float32"])
    with pytest.raises(ModelUnavailableError, match="--dtype only applies to --backend vllm"):
        engine_from_args(args, config_from_args(args))


def test_model_positions_come_from_the_checkpoints_config(
    tiny_model_path: Path, tmp_path: Path
) -> None:
    """The vllm backend's context is at most these (``--max-context`` defaults to 10000)."""
    assert model_positions(str(tiny_model_path)) == 4096
    vision = tmp_path / "vision"
    vision.mkdir()
    (vision / "config.json").write_text(
        json.dumps({"text_config": {"max_position_embeddings": 128}})
    )
    assert model_positions(str(vision)) == 128
    (vision / "config.json").write_text("{not json")
    assert model_positions(str(vision)) is None
    assert model_positions(str(tmp_path / "missing")) is None
    assert model_positions("nobody/no-such-model-in-the-cache") is None


def test_vllm_reason_is_the_refusal_not_pydantics_header() -> None:
    """vLLM refuses a ModelConfig with a pydantic ValidationError whose first line is only
    "1 validation error for ModelConfig"; the reason is its error's message."""
    from pydantic import BaseModel, field_validator

    class ModelConfig(BaseModel):
        max_model_len: int

        @field_validator("max_model_len")
        @classmethod
        def fits(cls, v: int) -> int:
            raise ValueError(
                f"User-specified max_model_len ({v}) is greater than the derived max_model_len "
                "(max_position_embeddings=4096.0). To allow overriding this maximum, set ..."
            )

    with pytest.raises(ValueError) as refused:
        ModelConfig(max_model_len=10000)
    assert str(refused.value).startswith("1 validation error for ModelConfig")
    assert vllm_reason(refused.value) == (
        "ValidationError: User-specified max_model_len (10000) is greater than the derived "
        "max_model_len (max_position_embeddings=4096.0)"
    )
    assert vllm_reason(
        RuntimeError("Engine core initialization failed. See root cause above.")
    ) == ("RuntimeError: Engine core initialization failed")


def test_a_hub_id_with_no_network_fails_at_once_naming_the_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Not offline by HF_HUB_OFFLINE, but the hub cannot be reached (here: a closed loopback
    port as $HF_ENDPOINT): no download is tried, so none of its retries or their warnings."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(ModelUnavailableError) as err:
        load_engine("WebShepherd/WebShepherd_8B")
    message = err.value.message
    assert "download (skipped: 127.0.0.1:" in message and "cannot be reached" in message
    assert "`hf download WebShepherd/WebShepherd_8B`" in message
    assert '`webshepherd serve --model "$(webshepherd dev tiny-model --quiet)"`' in message
    assert "huggingface-cli" not in message
    assert "Retrying" not in "".join(capfd.readouterr())


def test_a_missing_local_folder_suggests_a_folder_and_the_tiny_judge(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailableError) as err:
        load_engine(str(tmp_path / "nope"))
    assert "does not exist" in err.value.message
    assert "hf download" not in err.value.message  # a path is not a hub id
    assert "dev tiny-model --quiet" in err.value.message


def test_a_model_server_still_starting_is_waited_for(caplog: pytest.LogCaptureFixture) -> None:
    """`openai_server … &` then `serve` on the next line: the probe asks again while the server
    refuses connections (said once), and goes on once it answers."""
    import http.server
    import threading

    port = closed_port()

    class Models(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"data": [{"id": "m"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    def start_late() -> None:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Models)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append(server)

    started: list[http.server.ThreadingHTTPServer] = []
    timer = threading.Timer(1.5, start_late)
    timer.start()
    try:
        with caplog.at_level(logging.WARNING):
            served = probe_models(f"http://127.0.0.1:{port}/v1", None, wait_s=30, poll_s=0.2)
        assert [m["id"] for m in served] == ["m"]
        assert sum("waiting for the model server" in r.getMessage() for r in caplog.records) == 1
    finally:
        timer.join()
        for server in started:
            server.shutdown()
            server.server_close()


def test_a_server_that_never_comes_is_given_up_on_with_the_clear_error() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(ModelUnavailableError, match="cannot reach the model server"):
        probe_models(url, None, wait_s=0.6, poll_s=0.2)
