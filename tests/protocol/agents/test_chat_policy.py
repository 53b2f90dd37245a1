"""ChatPolicy against a real OpenAI-compatible HTTP endpoint on loopback.

The endpoint is a small ``http.server`` written here: it stands in for the external
LLM (scripted answers), records every request, and lets the tests check the bodies
byte for byte.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from webshepherd.protocol import Candidate
from webshepherd.protocol.agents import ChatPolicy, PageState, PolicyContext, RefineRequest, Turn
from webshepherd.protocol.agents.chat_policy import completions_url
from webshepherd.protocol.agents.policy import PolicyError, parse_answer, parse_plan
from webshepherd.protocol.agents.prompts import PLAN_SYSTEM, propose_prompt, refine_prompt
from webshepherd.protocol.errors import ErrorCode

from tests.fixtures.ports import closed_port

STATE = PageState(
    url="http://shop.test/",
    axtree="RootWebArea 'Shop'\n\t[12] searchbox 'Search'\n\t[13] button 'Search'",
    last_action_error="could not run \"click('99')\": no element with bid '99'",
)
HISTORY = (Turn("Open the shop.", "goto('http://shop.test/')"),)


class ChatServer:
    """Answers ``POST /v1/chat/completions`` with the next scripted choices."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.answers: list[tuple[int, Any]] = []  # (HTTP status, choices texts or error body)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": json.loads(body)}
                )
                status, texts = outer.answers.pop(0)
                if status == 200:
                    reply = {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "choices": [
                            {"index": i, "message": {"role": "assistant", "content": t},
                             "finish_reason": "stop"}
                            for i, t in enumerate(texts)
                        ],
                    }  # fmt: skip
                    data = json.dumps(reply).encode()
                else:
                    data = json.dumps({"error": {"message": texts}}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    server = ChatServer()
    yield server
    server.stop()


GOOD = "<think>\nThe search box is [12].\n</think>\n<action>\nfill('12', 'usb-c cable')\n</action>"


async def test_proposals_sample_n_answers_at_temperature_one(chat: ChatServer) -> None:
    chat.answers.append((200, [GOOD, "<action>click('13')</action>", "I am not sure."]))
    policy = ChatPolicy(chat.url, "policy-model", api_key="sk-test")
    context = PolicyContext("Buy a cable", HISTORY, plan=("Search", "Open"), samples=3)
    got = await policy.propose(STATE, context)
    assert got == [
        Candidate(thought="The search box is [12].", action="fill('12', 'usb-c cable')"),
        Candidate(thought="", action="click('13')"),
    ]  # the answer without an <action> block is dropped
    (req,) = chat.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer sk-test"
    prompt = propose_prompt(
        "Buy a cable", STATE.url, STATE.axtree, HISTORY, ["Search", "Open"], STATE.last_action_error
    )
    assert req["body"] == {
        "model": "policy-model",
        "messages": [{"role": "user", "content": prompt}],
        "n": 3,
        "temperature": 1.0,
        "max_tokens": 1024,
    }


async def test_a_server_that_returns_fewer_choices_is_asked_again(chat: ChatServer) -> None:
    chat.answers += [(200, [GOOD]), (200, [GOOD]), (200, ["<action>click('13')</action>"])]
    policy = ChatPolicy(chat.url + "/v1/", "m")
    got = await policy.propose(STATE, PolicyContext("Buy a cable", samples=3))
    assert [c.action for c in got] == ["fill('12', 'usb-c cable')"] * 2 + ["click('13')"]
    assert [r["body"]["n"] for r in chat.requests] == [3, 2, 1]
    assert "Authorization" not in chat.requests[0]["headers"]


async def test_refinement_sends_the_papers_prompt(chat: ChatServer) -> None:
    chat.answers.append((200, ["<think>Search instead.</think><action>click('13')</action>"]))
    draft = Candidate(thought="Deals.", action="click('40')")
    request = RefineRequest("Buy a cable", STATE, HISTORY, draft, "Wrong page.\n\nChecklist 1: No")
    got = await ChatPolicy(chat.url, "m", max_tokens=None).refine(request)
    assert got == Candidate(thought="Search instead.", action="click('13')")
    expected = refine_prompt(
        "Buy a cable", STATE.url, STATE.axtree, HISTORY, "Deals.", "click('40')",
        "Wrong page.\n\nChecklist 1: No",
    )  # fmt: skip
    assert chat.requests[0]["body"] == {
        "model": "m",
        "messages": [{"role": "user", "content": expected}],
        "n": 1,
        "temperature": 1.0,
    }


async def test_plan_asks_for_a_general_plan_and_parses_its_steps(chat: ChatServer) -> None:
    chat.answers.append(
        (200, ["1. Click the search box to type\n   (it is on top)\n2) Click **Search**\nDone."])
    )
    got = await ChatPolicy(chat.url, "m").plan("Buy a cable", STATE)
    assert got == ["Click the search box to type", "Click Search"]
    messages = chat.requests[0]["body"]["messages"]
    assert messages[0] == {"role": "system", "content": PLAN_SYSTEM}
    assert messages[1]["content"] == (
        f"OBSERVATION:\n{STATE.axtree}\nURL: {STATE.url}\nOBJECTIVE: Buy a cable"
    )


async def test_errors_are_policy_errors(chat: ChatServer) -> None:
    chat.answers.append((500, "the model is overloaded"))
    with pytest.raises(PolicyError, match=r"HTTP 500.*overloaded") as err:
        await ChatPolicy(chat.url, "m").propose(STATE, PolicyContext("x", samples=1))
    assert err.value.code is ErrorCode.MODEL_ERROR
    chat.answers.append((200, ["no tags at all"]))
    with pytest.raises(PolicyError, match="none of the 1 answers"):
        await ChatPolicy(chat.url, "m").propose(STATE, PolicyContext("x", samples=1))
    closed = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(PolicyError, match="cannot reach the policy model"):
        await ChatPolicy(closed, "m", timeout_s=5).propose(STATE, PolicyContext("x"))


def test_parsing_and_urls() -> None:
    assert parse_answer("<think>a</think><action>  </action>") is None
    assert parse_answer("<action>click('1')</action> then <action>click('2')</action>") == (
        Candidate(action="click('2')")
    )
    assert parse_plan("Plan:\nStep 1: Open it\n2. Buy it\n") == ["Open it", "Buy it"]
    assert completions_url("http://h:1") == "http://h:1/v1/chat/completions"
    assert completions_url("http://h:1/v1") == "http://h:1/v1/chat/completions"
    assert completions_url("http://h/api/v1/chat/completions") == (
        "http://h/api/v1/chat/completions"
    )
