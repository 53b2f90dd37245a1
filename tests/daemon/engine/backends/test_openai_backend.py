"""The OpenAI-compatible endpoint over the tiny model, and the OpenAI backend scoring through it
on loopback (a real HTTP server, a real engine)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from webshepherd.daemon.dev.openai_server import OpenAIServer
from webshepherd.daemon.engine.backends.base import JudgeBatch, JudgeOutput
from webshepherd.daemon.engine.backends.openai_backend import OpenAIBackend, label_group
from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend
from webshepherd.daemon.engine.engine import Engine, EngineConfig
from webshepherd.daemon.engine.types import StepInput
from webshepherd.protocol.common import Turn
from webshepherd.protocol.errors import ModelError

from tests.daemon.engine.backends.test_transformers_backend import _alone, _batch
from tests.fixtures.poll import until_sync

pytestmark = pytest.mark.model

KEY = "sk-test-webshepherd"


@pytest.fixture(scope="module")
def base(tiny_engine: Engine) -> TransformersBackend:
    assert isinstance(tiny_engine.backend, TransformersBackend)
    return tiny_engine.backend


@pytest.fixture(scope="module")
def server(base: TransformersBackend) -> Iterator[OpenAIServer]:
    s = OpenAIServer(base, "127.0.0.1", 0, api_key=KEY)
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def remote(server: OpenAIServer, base: TransformersBackend) -> OpenAIBackend:
    return OpenAIBackend(server.url, base.model_id, api_key=KEY, tokenizer=base.tokenizer)


def post(url: str, body: dict, key: str | None = KEY) -> tuple[int, dict]:
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            **({"Authorization": f"Bearer {key}"} if key else {}),
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_label_group_reads_token_text() -> None:
    assert label_group(" Yes") == 0 and label_group("\nIn") == 1 and label_group("No") == 2
    assert label_group("Yesterday") is None and label_group(" the") is None


def test_endpoint_speaks_the_completions_format(server: OpenAIServer, base) -> None:
    status, reply = post(
        f"{server.url}/completions",
        {
            "model": base.model_id,
            "prompt": ["<|im_start|>user\nhi", "x"],
            "n": 2,
            "max_tokens": 5,
            "temperature": 1.0,
            "logprobs": 5,
            "seed": 1,
        },
    )
    assert status == 200, reply
    assert reply["object"] == "text_completion" and len(reply["choices"]) == 4
    assert [c["index"] for c in reply["choices"]] == [0, 1, 2, 3]
    for c in reply["choices"]:
        lp = c["logprobs"]
        assert len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"])
        assert all(1 <= len(t) <= 5 for t in lp["top_logprobs"])
        assert "".join(lp["tokens"]) == c["text"]
        assert c["finish_reason"] in ("stop", "length")
    assert reply["usage"]["total_tokens"] == (
        reply["usage"]["prompt_tokens"] + reply["usage"]["completion_tokens"]
    )


def test_endpoint_rejects_bad_requests(server: OpenAIServer) -> None:
    assert post(f"{server.url}/completions", {"prompt": "x"}, key=None)[0] == 401
    assert post(f"{server.url}/completions", {"prompt": "x", "model": "other"})[0] == 404
    assert post(f"{server.url}/completions", {"prompt": 3})[0] == 400
    assert post(f"{server.url}/completions", {"prompt": "x", "logprobs": 99})[0] == 400
    assert post(f"{server.url}/nothing", {"prompt": "x"})[0] == 404
    req = urllib.request.Request(f"{server.url}/models", headers={"Authorization": f"Bearer {KEY}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert json.loads(r.read())["data"][0]["object"] == "model"


def test_greedy_judge_matches_the_local_backend(
    remote: OpenAIBackend, base: TransformersBackend
) -> None:
    batch = _batch(base, max_new=200)
    alone = _alone(base, batch)  # each prompt alone: the same computation as the server's
    out = remote.judge(batch)
    assert out.label_source == "top_k" and not out.prefix_shared
    assert out.prefilled_tokens == sum(base.count_tokens(batch.prefix + s) for s in batch.suffixes)
    for k in range(len(batch.suffixes)):
        a, b = alone[k].generations[0][0], out.generations[k][0]
        text = a.text.split("</answer>")[0]  # the server leaves the stop string out
        assert b.text == text
        assert b.finish_reason == a.finish_reason
        assert 0 < len(b.tokens) <= len(a.tokens)
        for ta, tb in zip(a.tokens, b.tokens, strict=False):
            assert tb.piece == ta.piece and tb.group == ta.group
            for full, top in zip(ta.mass, tb.mass, strict=True):
                assert top <= full + 1e-4  # a top-k sum never exceeds the full-vocabulary mass
    # somewhere the model writes a label, and the top-20 caught its probability
    assert any(
        t.group is not None and sum(t.mass) > 0 for g in out.generations for t in g[0].tokens
    )


def test_engine_scores_through_the_endpoint(remote: OpenAIBackend, tiny_engine: Engine) -> None:
    engine = Engine(remote, EngineConfig(max_new_tokens=160, checklist_max_new_tokens=160))
    checklist = engine.parse_reference_checklist("Checklist 1: Search\nChecklist 2: Buy")
    step = StepInput(
        intent="Buy red shoes",
        current_url="http://shop.example.com",
        axtree="RootWebArea 'Shop', focused\n\t[34] textbox 'Search'",
        checklist=checklist,
        history=(),
        candidates=(
            Turn("Search first.", "fill('34', 'red shoes')"),
            Turn("Scroll.", "scroll(0, 300)"),
        ),
        samples=2,
    )
    seen: list[tuple[int, int]] = []
    score = engine.score(step, on_progress=lambda c, s, _t: seen.append((c, s)))
    assert len(score.candidates) == 2
    assert all(c.label_source == "top_k" for c in score.candidates)
    assert all(len(c.samples) == 2 for c in score.candidates)
    assert set(seen) <= {(0, 0), (0, 1), (1, 0), (1, 1)} and seen
    assert score.generated_tokens > 0 and score.prompt_tokens > 0
    assert any(c.reward is not None for c in score.candidates)
    assert engine.make_checklist("Buy red shoes", "http://shop.example.com", step.axtree).items


def test_unreachable_server_is_a_model_error() -> None:
    dead = OpenAIBackend("http://127.0.0.1:9/v1", "m", timeout_s=5)
    dead.retry_delays_s = (0.01,)  # retried, then the error (test_openai_retries.py)
    with pytest.raises(ModelError, match="unreachable"):
        dead.generate("hi", 4)
    assert dead.count_tokens("abcd") >= 1 and dead.render_chat([{"role": "user", "content": "x"}])


# -- streaming -------------------------------------------------------------------------------


def sse(url: str, body: dict) -> list[dict | str]:
    """The events of a streamed completion: JSON chunks, then the string ``"[DONE]"``."""
    req = urllib.request.Request(
        url,
        data=json.dumps({**body, "stream": True}).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"},
        method="POST",
    )
    events: list[dict | str] = []
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.headers["Content-Type"] == "text/event-stream"
        for line in r:
            if line.startswith(b"data: "):
                data = line[6:].strip().decode()
                events.append(data if data == "[DONE]" else json.loads(data))
    return events


def test_streamed_chunks_add_up_to_the_whole_reply(server: OpenAIServer) -> None:
    body = {
        # both replies longer than the 8 characters "</answer>" holds back (the shipped judge
        # answers "Checklist 1:" with " Yes\n", 5, which come, rightly, in one piece)
        "prompt": ["<|im_start|>user\nBuy shoes<|im_end|>\n<|im_start|>assistant\n", "x y"],
        "n": 1,
        "max_tokens": 40,
        "temperature": 0.0,
        "logprobs": 4,
        "stop": ["</answer>", "\n\n"],
    }
    status, whole = post(f"{server.url}/completions", body)
    assert status == 200, whole
    events = sse(f"{server.url}/completions", {**body, "stream_options": {"include_usage": True}})
    assert events[-1] == "[DONE]" and all(isinstance(e, dict) for e in events[:-1])
    chunks = [e for e in events[:-1] if isinstance(e, dict)]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == whole["usage"]
    for choice in whole["choices"]:
        parts = [c for ch in chunks for c in ch["choices"] if c["index"] == choice["index"]]
        assert sum(bool(p["text"]) for p in parts) > 1  # token by token, not all at once
        assert "".join(p["text"] for p in parts) == choice["text"]
        assert [p["finish_reason"] for p in parts][-1] == choice["finish_reason"]
        assert all(p["finish_reason"] is None for p in parts[:-1])
        for key in ("tokens", "token_logprobs", "top_logprobs", "text_offset"):
            streamed = [x for p in parts for x in p["logprobs"][key]]
            assert streamed == choice["logprobs"][key], key


def test_streamed_request_errors_come_before_the_stream(server: OpenAIServer) -> None:
    with pytest.raises(urllib.error.HTTPError) as e:
        sse(f"{server.url}/completions", {"prompt": ["x", ""], "max_tokens": 4})
    assert e.value.code == 400


def test_streamed_judge_delivers_deltas_as_they_come(
    remote: OpenAIBackend, base: TransformersBackend
) -> None:
    assert remote.stream
    batch = _batch(base, samples=2, max_new=60)
    calls: list[tuple[int, int, str]] = []
    out = remote.judge(batch, on_delta=lambda c, s, t: calls.append((c, s, t)))
    assert len(out.generations) == len(batch.suffixes)
    assert all(len(row) == 2 for row in out.generations)
    assert len(calls) > sum(1 for row in out.generations for g in row if g.text)
    for c, row in enumerate(out.generations):
        for s, g in enumerate(row):
            assert "".join(t for cc, ss, t in calls if (cc, ss) == (c, s)) == g.text
            assert "".join(t.piece for t in g.tokens) == g.text
            assert g.finish_reason in ("stop", "length")
    # usage counts the stop string's tokens too, which the text leaves out
    assert out.generated_tokens >= sum(len(g.tokens) for row in out.generations for g in row)
    whole = OpenAIBackend(remote.base_url, remote.model_id, api_key=KEY, stream=False)
    greedy = _batch(base, samples=1, max_new=60)
    a, b = remote.judge(greedy), whole.judge(greedy)
    assert [[g.text for g in r] for r in a.generations] == [
        [g.text for g in r] for r in b.generations
    ]
    assert [[t.mass for t in r[0].tokens] for r in a.generations] == [
        [t.mass for t in r[0].tokens] for r in b.generations
    ]


def test_cancel_closes_the_stream_and_the_server_stops(
    server: OpenAIServer, remote: OpenAIBackend, base: TransformersBackend
) -> None:
    import threading

    before = server.completer.disconnects
    cancel = threading.Event()
    out = remote.judge(
        _batch(base, samples=2, max_new=400), on_delta=lambda *_: cancel.set(), cancel=cancel
    )
    finishes = [g.finish_reason for row in out.generations for g in row]
    assert "aborted" in finishes
    assert all(len(g.tokens) < 400 for row in out.generations for g in row)
    until_sync(  # the server notices at its next write
        lambda: server.completer.disconnects != before,
        what="the server to see the stream closed",
    )
    assert server.completer.disconnects == before + 1
    assert remote.generate("<|im_start|>user\nhi", 3) is not None  # the model is free again


def test_judge_many_runs_batches_concurrently_with_errors_apart(
    remote: OpenAIBackend, base: TransformersBackend
) -> None:
    import threading

    ok = _batch(base, max_new=30)
    too_long = JudgeBatch(prefix=ok.prefix, suffixes=ok.suffixes, samples=1, max_new_tokens=10**6)
    cancelled = threading.Event()
    cancelled.set()
    seen: list[tuple[int, int]] = []
    results = remote.judge_many(
        [ok, too_long, ok],
        [lambda c, s, _t: seen.append((c, s)), None, None],
        [None, None, cancelled],
    )
    assert len(results) == 3
    first, second, third = results
    assert isinstance(first, JudgeOutput) and isinstance(third, JudgeOutput)
    assert isinstance(second, ModelError) and "HTTP 400" in second.message
    alone = remote.judge(ok)
    assert [g[0].text for g in first.generations] == [g[0].text for g in alone.generations]
    assert {c for c, _s in seen} == set(range(len(ok.suffixes)))
    assert all(g.finish_reason == "aborted" for row in third.generations for g in row)
    assert remote.judge_many([], [], []) == []


def test_the_server_command_reads_its_key_from_the_environment(tiny_model_path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "WS_SERVER_KEY": KEY}
    cmd = [sys.executable, "-m", "webshepherd.daemon.dev.openai_server", "--model"]
    proc = subprocess.Popen(
        [
            *cmd,
            str(tiny_model_path),
            "--port",
            "0",
            "--device",
            "cpu",
            "--api-key-env",
            "WS_SERVER_KEY",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("serving ") and " at http://127.0.0.1:" in line, line
        url = line.rsplit(" at ", 1)[1].strip()
        req = urllib.request.Request(f"{url}/models", headers={"Authorization": f"Bearer {KEY}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            model_len = json.loads((tiny_model_path / "config.json").read_text())[
                "max_position_embeddings"
            ]
            assert json.loads(r.read())["data"][0]["max_model_len"] == model_len
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"{url}/models", timeout=10)
        assert e.value.code == 401
    finally:
        proc.terminate()
        proc.wait(10)
    missing = subprocess.run(
        [*cmd, str(tiny_model_path), "--api-key-env", "WS_NOT_SET_ANYWHERE"],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "WS_NOT_SET_ANYWHERE"},
    )
    assert missing.returncode == 2 and "WS_NOT_SET_ANYWHERE" in missing.stderr
