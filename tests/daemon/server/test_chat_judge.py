"""A daemon judging with ``--backend openai-chat`` over real sockets: the project's endpoint on
loopback behind it, and a rate-limiting server that costs one request, not the daemon."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from webshepherd.daemon.dev.openai_server import OpenAIServer
from webshepherd.daemon.engine.backends.openai_chat_backend import OpenAIChatBackend
from webshepherd.daemon.engine.engine import Engine, EngineConfig

from tests.fixtures.daemon import score_without_approval, start_session


@pytest.fixture
def endpoint(daemon_engine: Engine) -> Iterator[OpenAIServer]:
    server = OpenAIServer(daemon_engine.backend)  # type: ignore[arg-type]
    server.start()
    yield server
    server.stop()


@pytest.fixture
def busy_server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            data = json.dumps({"error": {"message": "rate limit reached"}}).encode()
            self.send_response(429)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


async def test_scored_through_a_chat_endpoint(start_daemon, endpoint, daemon_engine) -> None:
    backend = OpenAIChatBackend(endpoint.url, daemon_engine.model_id)
    engine = Engine(backend, EngineConfig(max_new_tokens=120, judge_inputs="text+image"))
    daemon = await start_daemon(engine=engine, stats_interval_s=0.2)
    monitor = await daemon.client(role="monitor", name="tui")
    await monitor.request({"type": "subscribe", "sessions": "*"})
    agent = await daemon.client()
    sid = await start_session(agent)  # no screenshot: judged as text, and said so
    scored = await score_without_approval(agent, sid)
    assert scored["type"] == "scored", scored
    assert all(r["probabilities"] == "top_k" for r in scored["results"])
    assert all(r["judge_inputs"] == "text" for r in scored["results"])
    assert all(len(r["samples"]) == 2 for r in scored["results"])
    stats = await monitor.wait_for(lambda m: m["type"] == "stats" and m["judge"]["steps"], 10)
    assert stats["judge"]["backend"] == "openai-chat"
    assert stats["judge"]["prompt_tokens_per_step"] > 0
    assert stats["remote"]["base_url"] == endpoint.url  # Engine.health(): the backend's probe


async def test_a_rate_limiting_server_answers_overloaded_and_the_daemon_serves_on(
    start_daemon, busy_server
) -> None:
    backend = OpenAIChatBackend(busy_server, "gpt-test", stream=False)
    backend.retry_delays_s = (0.01, 0.02)
    daemon = await start_daemon(engine=Engine(backend, EngineConfig(max_new_tokens=40)))
    agent = await daemon.client()
    sid = await start_session(agent)
    first = await score_without_approval(agent, sid)
    assert (first["type"], first["code"]) == ("error", "overloaded")
    assert "429" in first["message"] and "rate limit reached" in first["message"]
    other = await start_session(await daemon.client())  # another session still starts
    listed = await agent.request({"type": "sessions.list"})
    assert {s["session_id"] for s in listed["sessions"]} >= {sid, other}
