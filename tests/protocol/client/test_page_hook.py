"""The check of a page-hook reply: only the extension's signature under the reply key, naming
the very request the agent sent, passes (the whole hook client runs against the built
extension in tests/e2e/test_hook_forgery.py)."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
from webshepherd.protocol.client.page_hook import canonical_json, request_digest, verify_hook_reply

REPLY_KEY = "r" * 43
KEY = "q0l5V1pDb3JmW9mG1y2nX3c4Ra8sTb6uKe0vYhwz7Ag"
REQUEST = {"channel": "webshepherd", "dir": "request", "id": "ws-1", "type": "score", "key": KEY}


def signed(body: dict, key: str = REPLY_KEY, request: dict = REQUEST) -> dict:
    body = {**body, "request_digest": request_digest(request)}
    text = json.dumps(body)
    mac = hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()
    return {**body, "signed": text, "mac": mac}


BODY = {"channel": "webshepherd", "dir": "reply", "id": "ws-1", "type": "scored", "best": 0}


def test_a_signed_reply_passes_as_signed() -> None:
    reply = signed(BODY)
    reply["best"] = 1  # the outer copy is not what counts
    assert verify_hook_reply(reply, REPLY_KEY, REQUEST) == {
        **BODY,
        "request_digest": request_digest(REQUEST),
    }


def test_forgeries_fail() -> None:
    assert verify_hook_reply(BODY, REPLY_KEY, REQUEST) is None  # unsigned
    assert verify_hook_reply(signed(BODY, KEY), REPLY_KEY, REQUEST) is None  # overheard key
    tampered = signed(BODY)
    tampered["signed"] = tampered["signed"].replace('"best": 0', '"best": 1')
    assert verify_hook_reply(tampered, REPLY_KEY, REQUEST) is None
    other = signed({**BODY, "id": "ws-2"})
    assert verify_hook_reply({**other, "id": "ws-1"}, REPLY_KEY, REQUEST) is None  # another's
    assert verify_hook_reply({**signed(BODY), "mac": 5}, REPLY_KEY, REQUEST) is None


def test_a_signed_answer_to_another_body_under_the_same_id_and_key_fails() -> None:
    """A page script re-posts the agent's request with its own action; the extension signs
    its answer to that request: the signature is good, the request it names is not ours."""
    ours = {**REQUEST, "candidates": [{"action": "fill('3', 'x')"}], "approval": "auto"}
    theirs = {**REQUEST, "candidates": [{"action": "click('666')"}], "approval": "never"}
    assert verify_hook_reply(signed(BODY, request=ours), REPLY_KEY, ours) is not None
    assert verify_hook_reply(signed(BODY, request=theirs), REPLY_KEY, ours) is None
    unnamed = {**BODY}
    text = json.dumps(unnamed)
    mac = hmac.new(REPLY_KEY.encode(), text.encode(), hashlib.sha256).hexdigest()
    assert verify_hook_reply({**unnamed, "signed": text, "mac": mac}, REPLY_KEY, ours) is None


# the same vector as extension/test/page-hook.test.ts
VECTOR = {
    "id": "ws-1",
    "type": "score",
    "key": KEY,
    "candidates": [{"action": "click('12')", "thought": "é\u2028\n"}],
    "samples": 1,
    "approval": "never",
    "z": [1.5e-7, 1e21, 100.0, -0.5, True, None],
    "\U0001f600": 1,
    "\uffff": 2,
}
VECTOR_JSON = (
    '{"approval":"never","candidates":[{"action":"click(\'12\')","thought":"é\u2028\\n"}],'
    f'"id":"ws-1","key":"{KEY}","samples":1,"type":"score",'
    '"z":[1.5e-7,1e+21,100,-0.5,true,null],"\U0001f600":1,"\uffff":2}'
)


def test_canonical_json_is_the_extensions() -> None:
    assert canonical_json(VECTOR) == VECTOR_JSON
    assert request_digest(VECTOR) == hashlib.sha256(VECTOR_JSON.encode()).hexdigest()
    assert canonical_json("\ud800") == '"\\ud800"'  # a lone surrogate, escaped as JS does
    assert canonical_json([0.1 + 0.2, 1e16, 1e-6, 1e-7, 5e-324, -0.0]) == (
        "[0.30000000000000004,10000000000000000,0.000001,1e-7,5e-324,0]"
    )
    with pytest.raises(ValueError, match="no JSON form"):
        canonical_json(float("nan"))
    with pytest.raises(ValueError, match="no JSON form"):
        canonical_json({"x": object()})
