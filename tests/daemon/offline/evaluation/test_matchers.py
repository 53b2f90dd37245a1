"""The embedding matcher (offline MiniLM) and the LLM judge against a loopback
OpenAI-compatible server written here."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pytest
from webshepherd.daemon.offline.evaluation.matchers import (
    EQUIVALENCE_PROMPT,
    EmbeddingMatcher,
    LLMMatcher,
    make_matcher,
)
from webshepherd.daemon.offline.evaluation.planning import AgentStep, AgentTrajectory, task_metrics
from webshepherd.protocol.errors import WebShepherdError

HUMAN = ["Click Products link", "Click Electronics category", "Click Smartphones filter"]
PARAPHRASED = [
    "Click About Us link",
    "click on the products link",
    "open the electronics category",
    "Scroll down page",
    "Click Smartphones filter",
    "Click Back",
]


@pytest.fixture(scope="module")
def embedding() -> EmbeddingMatcher:
    return EmbeddingMatcher()


def test_embedding_matcher_on_paraphrased_table1(embedding):
    assert embedding.same("Click Products link", "click on the products link")
    assert not embedding.same("Click Products link", "Click About Us link")
    traj = AgentTrajectory("t", [AgentStep(a) for a in PARAPHRASED])
    m = task_metrics(HUMAN, traj, embedding)
    assert (m["step_success_rate"], m["recovery_rate"], m["deviations"]) == (1.0, 1.0, 2)
    strict = task_metrics(HUMAN, traj, make_matcher("exact"))
    assert strict["step_success_rate"] == pytest.approx(1 / 3)  # only the verbatim step
    assert embedding.keywords("q", ["New York", "Rhode Island"], "Massachusetts, New York") == [
        True,
        False,
    ]


def _grab(pattern: str, text: str) -> str:
    m = re.search(pattern, text)
    assert m is not None, pattern
    return m.group(1)


class _OpenAI(BaseHTTPRequestHandler):
    """Answers /v1/chat/completions like an OpenAI endpoint: equivalence by a word rule,
    keyword checks by substring; records what it was asked."""

    seen: ClassVar[list[dict]] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        prompt = body["messages"][0]["content"]
        if "Human Recorded Action:" in prompt:
            human = _grab(r"Human Recorded Action: (.*)", prompt)
            agent = _grab(r"Agent-Recorded Action: (.*)", prompt)
            key = lambda s: set(s.lower().split()) - {"click", "on", "the", "open"}  # noqa: E731
            content = "Reasoning: compared both.\nOutput: " + (
                "1" if key(human) == key(agent) else "0"
            )
        elif "reference keywords/phrases" in prompt:
            words = json.loads(_grab(r"Reference keywords/phrases: (.*)", prompt))
            answer = _grab(r"Agent's final answer: (.*)", prompt)
            content = "```json\n" + json.dumps({w: w.lower() in answer.lower() for w in words})
            content += "\n```"
        else:
            content = "??"
        if self.path != "/v1/chat/completions":
            self.send_response(404)
            self.end_headers()
            return
        out = json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint():
    server = HTTPServer(("127.0.0.1", 0), _OpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _OpenAI.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_llm_matcher_uses_the_papers_prompts(endpoint):
    llm = LLMMatcher(endpoint, "judge-1", api_key="sk-test")
    traj = AgentTrajectory("t", [AgentStep(a) for a in PARAPHRASED], answer="Boston and Salem")
    m = task_metrics(HUMAN, traj, llm, intent="cities?", must_include=["Boston", "Worcester"])
    assert (m["step_success_rate"], m["recovery_rate"]) == (1.0, 1.0)
    assert m["partial_success_rate"] == 0.5
    first = _OpenAI.seen[0]
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer sk-test"
    assert first["body"]["model"] == "judge-1" and first["body"]["temperature"] == 0
    prompt = first["body"]["messages"][0]["content"]
    assert prompt == EQUIVALENCE_PROMPT.format(human=HUMAN[0], agent=PARAPHRASED[0])
    assert "Semantic Equivalence means both actions express the same intent" in prompt
    n = len(_OpenAI.seen)
    llm.same(HUMAN[0], PARAPHRASED[0])
    assert len(_OpenAI.seen) == n  # cached


def test_llm_matcher_errors(endpoint):
    with pytest.raises(WebShepherdError, match="HTTP 404"):
        LLMMatcher(endpoint.replace("/v1", "/nope"), "m").same("a", "b")
    with pytest.raises(WebShepherdError, match="cannot connect"):
        LLMMatcher("http://127.0.0.1:9/v1", "m", timeout_s=2).same("a", "b")
    with pytest.raises(WebShepherdError, match="--llm-url"):
        make_matcher("llm")
