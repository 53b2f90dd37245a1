"""The remote backends' retries and health, against a misbehaving server on real loopback HTTP.

The server here is a scripted fake (it must fail on cue: cut a stream, answer 5xx); the real
``vllm serve`` behind ``vllm-router`` with a replica killed mid-run is in tests/vllm/.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from webshepherd.daemon.engine.backends.base import JudgeBatch
from webshepherd.daemon.engine.backends.openai_backend import OpenAIBackend
from webshepherd.daemon.engine.backends.remote_health import (
    RemoteHealth,
    parse_metrics,
    server_root,
)
from webshepherd.protocol.errors import ModelError, OverloadedError

TEXT = "<answer>\nChecklist 1: Yes"
METRICS = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="tiny"} 2.0
vllm:num_requests_waiting{engine="0",model_name="tiny"} 1.0
vllm:prefix_cache_queries_total{engine="0",model_name="tiny"} 300.0
vllm:prefix_cache_queries_total{engine="1",model_name="tiny"} 100.0
vllm:prefix_cache_hits_total{engine="0",model_name="tiny"} 256.0
vllm:prefix_cache_hits_created 1.7e9
"""

# What the fake does for each POST, by its count: "ok", "cut" (a stream broken off after its
# first chunk), or an HTTP status.
Script = Callable[[int], "str | int"]


def _chunks() -> list[dict[str, Any]]:
    """TEXT streamed as three chunks of one choice, the label token with its top-k."""
    tops = {" Yes": math.log(0.6), " No": math.log(0.2)}
    parts = ["<answer>\n", "Checklist 1:", " Yes"]
    return [
        {
            "choices": [
                {
                    "index": 0,
                    "text": p,
                    "logprobs": {"tokens": [p], "top_logprobs": [tops if p == " Yes" else {}]},
                    "finish_reason": "stop" if p == " Yes" else None,
                }
            ]
        }
        for p in parts
    ]


class _Fake:
    def __init__(self, script: Script, metrics: str | None = METRICS) -> None:
        self.posts = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, data: bytes, kind: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    self._send(200, b'{"data": [{"id": "m"}]}')
                elif self.path == "/metrics" and metrics is not None:
                    self._send(200, metrics.encode(), "text/plain")
                else:
                    self._send(404, b"{}")

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.posts += 1
                what = script(outer.posts)
                if isinstance(what, int):
                    self._send(what, json.dumps({"error": {"message": f"said {what}"}}).encode())
                    return
                if not body.get("stream"):
                    choice = {"index": 0, "text": TEXT, "finish_reason": "stop"}
                    usage = {"prompt_tokens": 10, "completion_tokens": 3}
                    self._send(200, json.dumps({"choices": [choice], "usage": usage}).encode())
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                chunks = _chunks()
                usage = {
                    "choices": [],
                    "usage": {
                        "prompt_tokens": 10,
                        "completion_tokens": 3,
                        "prompt_tokens_details": {"cached_tokens": 8},
                    },
                }
                for c in chunks[:1] if what == "cut" else [*chunks, usage]:
                    self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")
                    self.wfile.flush()
                if what != "cut":
                    self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake() -> Iterator[Callable[..., _Fake]]:
    made: list[_Fake] = []

    def make(script: Script, metrics: str | None = METRICS) -> _Fake:
        made.append(_Fake(script, metrics))
        return made[-1]

    yield make
    for f in made:
        f.close()


def _backend(url: str, stream: bool = True) -> OpenAIBackend:
    b = OpenAIBackend(url, "m", stream=stream, timeout_s=10)
    b.retry_delays_s = (0.01, 0.02)
    return b


BATCH = JudgeBatch(prefix="judge this: ", suffixes=["a"], samples=1, max_new_tokens=8)


def test_a_stream_cut_off_is_sent_again_and_its_text_reaches_on_delta_once(fake) -> None:
    f = fake(lambda i: "cut" if i == 1 else "ok")
    b = _backend(f.url)
    seen: list[str] = []
    out = b.judge(BATCH, on_delta=lambda c, s, text: seen.append(text))
    assert f.posts == 2
    assert out.generations[0][0].text == TEXT and out.generations[0][0].finish_reason == "stop"
    assert "".join(seen) == TEXT  # the first chunk was not passed on twice
    h = b.health()["remote"]
    assert isinstance(h, dict)
    assert h["retries"] == 1 and h["failures"] == 0 and h["in_flight"] == 0
    assert h["cached_prompt_tokens"] == 8 and h["prompt_tokens"] == 10


def test_5xx_and_a_closed_port_are_retried_then_a_clear_error(fake) -> None:
    flaky = fake(lambda i: 502 if i <= 2 else "ok")
    b = _backend(flaky.url, stream=False)
    assert b.generate("hi", 4) == TEXT and flaky.posts == 3

    broken = fake(lambda i: 500)
    b = _backend(broken.url)
    with pytest.raises(ModelError, match=r"HTTP 500: said 500 \(after 2 retries\)"):
        b.judge(BATCH)
    assert broken.posts == 3
    h = b.health()["remote"]
    assert isinstance(h, dict)
    assert h["failures"] == 1 and "HTTP 500" in str(h["last_error"])

    busy = fake(lambda i: 503)
    with pytest.raises(OverloadedError, match="HTTP 503"):
        _backend(busy.url).judge(BATCH)

    dead = _backend("http://127.0.0.1:9/v1")
    with pytest.raises(ModelError, match=r"unreachable.*after 2 retries") as caught:
        dead.generate("hi", 4)
    # failures.py's rule: the exception's type, never its text (errno, addresses, paths)
    assert caught.value.message == (
        "the model server at http://127.0.0.1:9/v1 is unreachable (ConnectionRefusedError)"
        " (after 2 retries)"
    )
    assert dead.health()["remote"]["reachable"] is False  # type: ignore[index]


def test_a_4xx_is_not_retried(fake) -> None:
    f = fake(lambda i: 400)
    with pytest.raises(ModelError, match="HTTP 400"):
        _backend(f.url).judge(BATCH)
    assert f.posts == 1


def test_health_reads_vllm_metrics_where_the_server_has_them(fake) -> None:
    f = fake(lambda i: "ok")
    h = RemoteHealth(f.url).read()
    assert h["reachable"] is True and h["in_flight"] == 0
    assert h["server_running"] == 2 and h["server_waiting"] == 1
    assert h["prefix_cache_queries"] == 400 and h["prefix_cache_hits"] == 256
    assert h["cached_prompt_tokens"] is None  # no reply has said yet

    plain = fake(lambda i: "ok", metrics=None)  # a server without /metrics: no cache figures
    h = RemoteHealth(plain.url).read()
    assert h["reachable"] is True and "prefix_cache_hits" not in h


def test_probes_are_spaced() -> None:
    r = RemoteHealth("http://127.0.0.1:9/v1", probe_every_s=5.0)
    assert r.read(now=100.0)["reachable"] is False
    r._probe = {"reachable": True}  # what a probe would have found
    assert r.read(now=104.0)["reachable"] is True  # not probed again within 5 s
    assert r.read(now=106.0)["reachable"] is False


def test_parse_metrics_and_server_root() -> None:
    assert parse_metrics(METRICS) == {
        "server_running": 2.0,
        "server_waiting": 1.0,
        "prefix_cache_queries": 400.0,
        "prefix_cache_hits": 256.0,
    }
    assert parse_metrics("garbage\nvllm:num_requests_running nan-ish\n") == {}
    assert server_root("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000"
    assert server_root("http://h:1/api/v1/") == "http://h:1/api"
