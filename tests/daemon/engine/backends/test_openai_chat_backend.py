"""``--backend openai-chat``: the project's endpoint speaks chat-completions with logprobs; the
chat backend judges through it on loopback; misbehaving servers (real HTTP) give clear errors."""

from __future__ import annotations

import base64
import json
import math
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from webshepherd.daemon.dev.openai_server import OpenAIServer
from webshepherd.daemon.dev.screenshots import axtree_png
from webshepherd.daemon.engine.backends.openai_chat_backend import (
    OpenAIChatBackend,
    parse_messages,
    render_messages,
)
from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend
from webshepherd.daemon.engine.engine import Engine, EngineConfig
from webshepherd.daemon.engine.loader import load_engine
from webshepherd.daemon.engine.prompts import IMAGE_PLACEHOLDER, image_content, step_judge_messages
from webshepherd.daemon.engine.types import StepInput
from webshepherd.protocol.common import Turn
from webshepherd.protocol.errors import ModelError, ModelUnavailableError, OverloadedError

from tests.daemon.engine.backends.test_openai_backend import post

KEY = "sk-chat-test"


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


def _step(engine: Engine, samples: int = 1) -> StepInput:
    return StepInput(
        intent="Buy red shoes",
        current_url="http://shop.example.com",
        axtree="RootWebArea 'Shop', focused\n\t[34] textbox 'Search'",
        checklist=engine.parse_reference_checklist("Checklist 1: Search\nChecklist 2: Buy"),
        history=(),
        candidates=(
            Turn("Search first.", "fill('34', 'red shoes')"),
            Turn("Scroll.", "scroll(0, 300)"),
        ),
        samples=samples,
    )


_VARIANTS = {
    **dict.fromkeys(("Yes", "yes", "YES", "Done", "Completed", "Correct"), 0),
    **dict.fromkeys(("In", "Pending", "Part", "Partial", "InProgress"), 1),
    **dict.fromkeys(("No", "NO", "Not", "None", "Nope", "Un", "Wrong"), 2),
}


def _eq2_by_hand(content: list[dict[str, Any]], items: int) -> float | None:
    """Eq. 2 from a chat reply's ``logprobs.content``: in the answer, the first Yes / In / No
    token of each line; its groups' probabilities from ``top_logprobs`` normalised over the
    three groups (each group: the paper's label variants, Appendix C.2); P(Yes) + 0.5 P(In
    Progress), averaged over the lines "Checklist N:" with N an item of the checklist."""
    text = "".join(t["token"] for t in content)
    start = text.find("<answer>")
    if start < 0:
        return None
    words = {"Yes": 0, "In": 1, "No": 2}
    terms: dict[int, float] = {}
    pos = 0
    for t in content:
        begin, pos = pos, pos + len(t["token"])
        word = t["token"].lstrip(" \n")
        if begin < start + len("<answer>") or word not in words:
            continue
        line = text.rfind("\n", 0, pos - len(word)) + 1
        numbered = re.match(r"Checklist (\d+):", text[line:])
        if line in terms or not numbered or not 1 <= int(numbered.group(1)) <= items:
            continue
        mass = [0.0, 0.0, 0.0]
        for e in t["top_logprobs"]:
            w = e["token"].lstrip(" \n")
            if w in _VARIANTS and len(e["token"]) - len(w) <= 1:
                mass[_VARIANTS[w]] += math.exp(e["logprob"])
        total = sum(mass)
        terms[line] = (mass[0] + 0.5 * mass[1]) / total
    return sum(terms.values()) / len(terms) if terms else None


def test_messages_round_trip_through_the_rendered_text() -> None:
    messages = [{"role": "system", "content": ""}, {"role": "user", "content": "a\x1eb {x}"}]
    assert parse_messages(render_messages(messages)) == [
        {"role": "system", "content": ""},
        {"role": "user", "content": "ab {x}"},
    ]
    with pytest.raises(ModelError):
        parse_messages("<|im_start|>user\nhi")


@pytest.mark.model
def test_endpoint_speaks_chat_completions_with_logprobs(server: OpenAIServer, base) -> None:
    body = {
        "model": base.model_id,
        "messages": [{"role": "user", "content": "Checklist 1: Search"}],
        "max_tokens": 6,
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": 3,
    }
    status, reply = post(f"{server.url}/chat/completions", body, key=KEY)
    assert status == 200 and reply["object"] == "chat.completion"
    choice = reply["choices"][0]
    content = choice["logprobs"]["content"]
    assert "".join(t["token"] for t in content) == choice["message"]["content"]
    assert all(len(t["top_logprobs"]) == 3 for t in content)
    assert reply["usage"]["completion_tokens"] == len(content)
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    bad = {**body, "messages": [{"role": "user", "content": [image]}]}
    assert post(f"{server.url}/chat/completions", bad, key=KEY)[0] == 400
    assert post(f"{server.url}/chat/completions", {**body, "top_logprobs": 99}, key=KEY)[0] == 400


@pytest.mark.model
@pytest.mark.parametrize("stream", [True, False])
def test_rewards_equal_eq2_from_the_servers_top_logprobs(
    server: OpenAIServer, tiny_engine: Engine, stream: bool
) -> None:
    backend = OpenAIChatBackend(server.url, tiny_engine.model_id, api_key=KEY, stream=stream)
    engine = Engine(backend, EngineConfig(max_new_tokens=160))
    step = _step(engine)
    deltas: list[tuple[int, int, str]] = []
    score = engine.score(step, on_progress=lambda c, s, t: deltas.append((c, s, t)))
    assert all(c.label_source == "top_k" for c in score.candidates)
    checked = 0
    for k, cand in enumerate(score.candidates):
        body = {
            "messages": step_judge_messages(step, k, engine.config.history_steps),
            "max_tokens": 160,
            "temperature": 0,
            "stop": ["</answer>"],
            "logprobs": True,
            "top_logprobs": 20,
        }
        status, reply = post(f"{server.url}/chat/completions", body, key=KEY)
        assert status == 200
        assert cand.samples[0].text == reply["choices"][0]["message"]["content"]
        assert "".join(t for c, _, t in deltas if c == k) == cand.samples[0].text
        expected = _eq2_by_hand(reply["choices"][0]["logprobs"]["content"], 2)
        if expected is None:
            assert cand.reward is None
        else:
            checked += 1
            assert cand.reward == pytest.approx(expected, abs=1e-6)
    assert checked, "the tiny model wrote no label: nothing was compared"
    assert score.prompt_tokens > 0 and score.generated_tokens > 0


@pytest.fixture(scope="module")
def vision_server(tiny_vision_engine: Engine) -> Iterator[OpenAIServer]:
    assert isinstance(tiny_vision_engine.backend, TransformersBackend)
    s = OpenAIServer(tiny_vision_engine.backend, "127.0.0.1", 0, api_key=KEY)
    s.start()
    yield s
    s.stop()


def _shot_step(engine: Engine) -> StepInput:
    step = _step(engine)
    return replace(step, screenshot=axtree_png(step.axtree), screenshot_mime="image/png")


@pytest.mark.model
def test_vision_endpoint_takes_an_inline_image(vision_server: OpenAIServer) -> None:
    url = "data:image/png;base64," + base64.b64encode(axtree_png("RootWebArea 'Shop'")).decode()
    body = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look: "},
                    {"type": "image_url", "image_url": {"url": url, "detail": "low"}},
                    {"type": "text", "text": " Checklist 1:"},
                ],
            }
        ],
        "max_tokens": 4,
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": 2,
    }
    status, reply = post(f"{vision_server.url}/chat/completions", body, key=KEY)
    assert status == 200, reply
    text_only = {**body, "messages": [{"role": "user", "content": "Look:  Checklist 1:"}]}
    status, plain = post(f"{vision_server.url}/chat/completions", text_only, key=KEY)
    assert status == 200
    # the image's tokens are in the prompt: more prompt tokens than the text alone
    assert reply["usage"]["prompt_tokens"] > plain["usage"]["prompt_tokens"] + 4
    bad = json.loads(json.dumps(body))
    bad["messages"][0]["content"][1]["image_url"]["url"] = "http://example.com/a.png"
    assert post(f"{vision_server.url}/chat/completions", bad, key=KEY)[0] == 400
    bad["messages"][0]["content"][1]["image_url"]["url"] = "data:image/png;base64,bm9wZQ=="
    assert post(f"{vision_server.url}/chat/completions", bad, key=KEY)[0] == 400


@pytest.mark.model
def test_text_image_rewards_equal_eq2_from_the_servers_top_logprobs(
    vision_server: OpenAIServer, tiny_vision_engine: Engine
) -> None:
    backend = OpenAIChatBackend(vision_server.url, tiny_vision_engine.model_id, api_key=KEY)
    engine = Engine(backend, EngineConfig(max_new_tokens=160, judge_inputs="text+image"))
    step = _shot_step(engine)
    score = engine.score(step)
    assert all(c.judge_inputs == "text+image" for c in score.candidates)
    assert step.screenshot is not None
    url = "data:image/png;base64," + base64.b64encode(step.screenshot).decode()
    checked = 0
    for k, cand in enumerate(score.candidates):
        messages: list[dict[str, Any]] = list(
            step_judge_messages(step, k, engine.config.history_steps, with_image=True)
        )
        user = next(i for i, m in enumerate(messages) if IMAGE_PLACEHOLDER in m["content"])
        messages[user] = {"role": "user", "content": image_content(messages[user]["content"], url)}
        body = {
            "messages": messages,
            "max_tokens": 160,
            "temperature": 0,
            "stop": ["</answer>"],
            "logprobs": True,
            "top_logprobs": 20,
        }
        status, reply = post(f"{vision_server.url}/chat/completions", body, key=KEY)
        assert status == 200
        assert cand.samples[0].text == reply["choices"][0]["message"]["content"]
        expected = _eq2_by_hand(reply["choices"][0]["logprobs"]["content"], 2)
        if expected is None:
            assert cand.reward is None
        else:
            checked += 1
            assert cand.reward == pytest.approx(expected, abs=1e-6)
    assert checked, "the tiny vision model wrote no label: nothing was compared"
    # the same judgement through transformers, in process: the same text
    local = tiny_vision_engine.score(step)
    # (the server cuts the stop string off, as OpenAI does; the backend keeps it)
    assert [c.samples[0].text.split("</answer>")[0] for c in local.candidates] == [
        c.samples[0].text for c in score.candidates
    ]


@pytest.mark.model
def test_samples_and_checklist_through_the_chat_loader(server: OpenAIServer, monkeypatch) -> None:
    monkeypatch.setenv("CHAT_KEY", KEY)
    engine = load_engine(
        "unused", backend="openai-chat", base_url=server.url, api_key=KEY,
        config=EngineConfig(max_new_tokens=120, checklist_max_new_tokens=160),
    )  # fmt: skip
    assert engine.backend_name == "openai-chat"
    score = engine.score(_step(engine, samples=3))
    assert all(len(c.samples) == 3 for c in score.candidates)
    assert engine.make_checklist("Buy red shoes", "http://shop.example.com", "[1] link 'Shoes'")


# -- misbehaving servers, over real loopback HTTP ---------------------------------------------


class _FakeServer:
    """A loopback HTTP server answering each POST with ``answer(body, count)``."""

    def __init__(self, answer: Callable[[dict[str, Any], int], tuple[int, bytes, dict]]) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, data: bytes, headers: dict) -> None:
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.headers.get("Authorization") != f"Bearer {KEY}":
                    self._reply(401, b'{"error": {"message": "no key"}}', {})
                    return
                self._reply(200, json.dumps({"data": [{"id": "gpt-test"}]}).encode(), {})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bodies.append(body)
                outer.headers.append(dict(self.headers))
                self._reply(*answer(body, len(outer.bodies)))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _choice(i: int, text: str, logprobs: bool = True) -> dict[str, Any]:
    """A reply whose text ends in a label token (" Yes"), 0.6 Yes / 0.2 No in its top-k."""
    head, label = text.rsplit(" ", 1)
    tops = [{"token": " Yes", "logprob": math.log(0.6)}, {"token": " No", "logprob": math.log(0.2)}]
    content = [
        {"token": head, "logprob": -0.1, "top_logprobs": []},
        {"token": " " + label, "logprob": math.log(0.6), "top_logprobs": tops},
    ]
    return {
        "index": i,
        "message": {"role": "assistant", "content": text},
        "logprobs": {"content": content} if logprobs else None,  # some servers: null
        "finish_reason": "stop",
    }


def _ok(choices: list[dict[str, Any]]) -> tuple[int, bytes, dict]:
    usage = {"prompt_tokens": 100, "completion_tokens": len(choices)}
    return 200, json.dumps({"choices": choices, "usage": usage}).encode(), {}


@pytest.fixture
def fake() -> Iterator[Callable[..., _FakeServer]]:
    made: list[_FakeServer] = []

    def make(answer: Callable[[dict[str, Any], int], tuple[int, bytes, dict]]) -> _FakeServer:
        made.append(_FakeServer(answer))
        return made[-1]

    yield make
    for s in made:
        s.close()


def _batch_engine(url: str) -> tuple[OpenAIChatBackend, Engine]:
    backend = OpenAIChatBackend(url, "gpt-test", api_key=KEY, stream=False)
    backend.retry_delays_s = (0.01, 0.02)
    return backend, Engine(backend, EngineConfig(max_new_tokens=40))


def test_a_reply_without_logprobs_is_a_model_error_naming_the_answer(fake) -> None:
    s = fake(lambda body, i: _ok([_choice(0, "<answer>Checklist 1: Yes", logprobs=False)]))
    _, engine = _batch_engine(s.url)
    with pytest.raises(ModelError, match=r"without logprobs.*Checklist 1: Yes"):
        engine.score(_step(engine))


def test_malformed_json_is_a_model_error(fake) -> None:
    s = fake(lambda body, i: (200, b"<html>oops</html>", {}))
    _, engine = _batch_engine(s.url)
    with pytest.raises(ModelError, match=r"not JSON.*oops"):
        engine.score(_step(engine))


def test_429_is_retried_with_backoff_then_overloaded(fake) -> None:
    def answer(body: dict, i: int) -> tuple[int, bytes, dict]:
        if i <= 2:
            return 429, b'{"error": {"message": "slow down"}}', {}
        return _ok([_choice(0, "<answer>Checklist 1: Yes")])

    s = fake(answer)
    backend, _ = _batch_engine(s.url)
    assert backend.generate(render_messages([{"role": "user", "content": "hi"}]), 5)
    assert len(s.bodies) == 3  # two 429s, then the answer

    busy = fake(lambda body, i: (429, b'{"error": {"message": "quota"}}', {"Retry-After": "0"}))
    backend, engine = _batch_engine(busy.url)
    with pytest.raises(OverloadedError, match=r"429.*quota"):
        engine.score(_step(engine))


def test_a_server_ignoring_n_falls_back_to_one_request_per_sample(fake, caplog) -> None:
    s = fake(lambda body, i: _ok([_choice(0, "<answer>\nChecklist 1: Yes")]))
    backend, engine = _batch_engine(s.url)
    score = engine.score(_step(engine, samples=3))
    assert all(len(c.samples) == 3 for c in score.candidates)
    # Eq. 2 from the fake's top log-probabilities: 0.6 / (0.6 + 0.2)
    assert all(c.reward == pytest.approx(0.75) for c in score.candidates)
    assert backend.health()["n_refused"] is True
    assert sum("one request per sample" in r.message for r in caplog.records) == 1
    assert [b.get("n") for b in s.bodies].count(3) <= 2


def test_a_server_refusing_n_falls_back_too(fake) -> None:
    def answer(body: dict, i: int) -> tuple[int, bytes, dict]:
        if body.get("n", 1) > 1:
            return 400, b'{"error": {"message": "n must be 1"}}', {}
        return _ok([_choice(0, "<answer>\nChecklist 1: Yes")])

    s = fake(answer)
    _, engine = _batch_engine(s.url)
    score = engine.score(_step(engine, samples=2))
    assert all(len(c.samples) == 2 for c in score.candidates)


def test_requests_carry_logprobs_and_the_key_only_in_the_header(fake, caplog) -> None:
    s = fake(lambda body, i: _ok([_choice(j, "<answer>\nChecklist 1: Yes") for j in range(2)]))
    _, engine = _batch_engine(s.url)
    engine.score(_step(engine, samples=2))
    body = s.bodies[0]
    assert body["logprobs"] is True and body["top_logprobs"] == 20 and body["n"] == 2
    assert body["model"] == "gpt-test" and body["messages"][-1]["role"] == "user"
    assert s.headers[0]["Authorization"] == f"Bearer {KEY}"
    assert KEY not in json.dumps(body) and all(KEY not in r.getMessage() for r in caplog.records)


def test_start_up_probe_errors(fake) -> None:
    s = fake(lambda body, i: _ok([]))
    with pytest.raises(ModelUnavailableError, match=r"401.*--api-key-env"):
        load_engine("x", backend="openai-chat", base_url=s.url)
    with pytest.raises(ModelUnavailableError, match=r"does not serve 'gpt-9'.*gpt-test"):
        load_engine("x", backend="openai-chat", base_url=s.url, api_key=KEY, remote_model="gpt-9")
    with pytest.raises(ModelUnavailableError, match="cannot reach"):
        load_engine("x", backend="openai-chat", base_url="http://127.0.0.1:9/v1", server_wait=0)
    engine = load_engine("x", backend="openai-chat", base_url=s.url, api_key=KEY)
    assert engine.model_id == "gpt-test"


def test_a_server_error_names_its_message(fake) -> None:
    s = fake(lambda body, i: (500, b'{"error": {"message": "boom"}}', {}))
    _, engine = _batch_engine(s.url)
    with pytest.raises(ModelError, match="HTTP 500: boom"):
        engine.score(_step(engine))


# -- text+image: the authors' multimodal layout ------------------------------------------------

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
)


def _image_step(engine: Engine, screenshot: bytes | None) -> StepInput:
    step = _step(engine)
    return StepInput(**{**step.__dict__, "screenshot": screenshot, "screenshot_mime": "image/png"})


def test_text_image_requests_follow_the_authors_layout(fake) -> None:
    s = fake(lambda body, i: _ok([_choice(0, "<answer>\nChecklist 1: Yes")]))
    backend = OpenAIChatBackend(s.url, "gpt-test", api_key=KEY, stream=False)
    engine = Engine(backend, EngineConfig(max_new_tokens=40, judge_inputs="text+image"))
    step = _image_step(engine, PNG)
    score = engine.score(step)
    assert [c.judge_inputs for c in score.candidates] == ["text+image"] * 2
    assert all(c.reward == pytest.approx(0.75) for c in score.candidates)
    texts = [step_judge_messages(step, k, 10) for k in range(2)]
    for body in s.bodies:
        system, user = body["messages"]
        # requests run concurrently: the candidate is the one whose action the request carries
        k = next(k for k in range(2) if step.candidates[k].action in user["content"][2]["text"])
        assert system == texts[k][0]
        before, image, after = user["content"]
        # the text variant's user message with the screenshot block after the AX tree
        plain = texts[k][1]["content"]
        block = (
            "### SOM Image Screenshot\nHere is a current image screenshot of the page, it is "
            "annotated with bounding boxes and corresponding bids:\n"
        )
        axtree_end = plain.index("## Checklist\n")
        assert before == {"type": "text", "text": plain[:axtree_end] + block}
        assert image == {
            "type": "image_url",
            "image_url": {
                "url": "data:image/png;base64," + base64.b64encode(PNG).decode(),
                "detail": "low",
            },
        }
        assert after == {"type": "text", "text": "\n" + plain[axtree_end:]}


def test_a_step_without_a_screenshot_is_judged_as_text_and_says_so(fake) -> None:
    s = fake(lambda body, i: _ok([_choice(0, "<answer>\nChecklist 1: Yes")]))
    backend = OpenAIChatBackend(s.url, "gpt-test", api_key=KEY, stream=False)
    engine = Engine(backend, EngineConfig(max_new_tokens=40, judge_inputs="text+image"))
    score = engine.score(_image_step(engine, None))
    assert [c.judge_inputs for c in score.candidates] == ["text", "text"]
    assert all(isinstance(b["messages"][1]["content"], str) for b in s.bodies)
    assert all("<IMAGE_PLACEHOLDER>" not in b["messages"][1]["content"] for b in s.bodies)


@pytest.mark.model
def test_images_to_a_text_model_are_a_clear_error(server: OpenAIServer, tiny_engine) -> None:
    backend = OpenAIChatBackend(server.url, tiny_engine.model_id, api_key=KEY)
    engine = Engine(backend, EngineConfig(max_new_tokens=40, judge_inputs="text+image"))
    with pytest.raises(ModelError, match="HTTP 400: this model takes no images"):
        engine.score(_image_step(engine, PNG))


@pytest.mark.model
def test_text_image_needs_a_backend_that_takes_images(tiny_model_path) -> None:
    with pytest.raises(ModelUnavailableError, match="takes no images"):
        load_engine(
            str(tiny_model_path), device="cpu", config=EngineConfig(judge_inputs="text+image")
        )
