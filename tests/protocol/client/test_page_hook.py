"""The check of a page-hook reply: only the extension's signature under the reply key passes
(the whole hook client runs against the built extension in tests/e2e/test_hook_forgery.py)."""

from __future__ import annotations

import hashlib
import hmac
import json

from webshepherd.protocol.client.page_hook import verify_hook_reply

REPLY_KEY = "r" * 43
KEY = "k" * 43


def signed(body: dict, key: str = REPLY_KEY) -> dict:
    text = json.dumps(body)
    mac = hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()
    return {**body, "signed": text, "mac": mac}


BODY = {"channel": "webshepherd", "dir": "reply", "id": "ws-1", "type": "scored", "best": 0}


def test_a_signed_reply_passes_as_signed() -> None:
    reply = signed(BODY)
    reply["best"] = 1  # the outer copy is not what counts
    assert verify_hook_reply(reply, REPLY_KEY) == BODY


def test_forgeries_fail() -> None:
    assert verify_hook_reply(BODY, REPLY_KEY) is None  # unsigned
    assert verify_hook_reply(signed(BODY, KEY), REPLY_KEY) is None  # under the overheard key
    tampered = signed(BODY)
    tampered["signed"] = tampered["signed"].replace('"best": 0', '"best": 1')
    assert verify_hook_reply(tampered, REPLY_KEY) is None
    other = signed({**BODY, "id": "ws-2"})
    assert verify_hook_reply({**other, "id": "ws-1"}, REPLY_KEY) is None  # another request's
    assert verify_hook_reply({**signed(BODY), "mac": 5}, REPLY_KEY) is None
