"""The message unions and their helpers: the best-effort request id of a frame that failed to
parse, who may send a message, which messages are a session's steps."""

from __future__ import annotations

from pathlib import Path

import pytest
from webshepherd.protocol import replies, requests, union
from webshepherd.protocol.requests import SESSION_REQUESTS, is_session_request
from webshepherd.protocol.union import CLIENT_TYPES, parse_client_message, request_id_of


@pytest.mark.parametrize(
    ("raw", "rid"),
    [
        ('{"type": "observe", "id": "o1", "url": 5}', "o1"),
        ('{"type": "observe", "id": "o2", "axtree": "cut sh', "o2"),  # cut after the id
        (b'{"id": "o3", "type": "observe", "axtree": "\xff', "o3"),  # bytes, cut in a string
        ('{"type": "observe", "axtree": "x", "id": "o', None),  # cut inside the id
        ('{"id": "o4", "a": tru, "b": 1}', None),  # broken before the cut: no JSON at all
        ('{"id": 5}', None),
        ('["id", "o5"]', None),
        ("", None),
    ],
)
def test_request_id_of_reads_a_frame_as_far_as_it_goes(raw, rid):
    assert request_id_of(raw) == rid


VALID = sorted((Path(__file__).resolve().parents[2] / "protocol/vectors/valid").glob("client.*"))


def test_who_may_send_a_message_and_whether_it_is_a_sessions_step_come_with_it():
    """Only a paired person's tool decides, sets a mode or labels as a person; the session's
    steps go to the machine whole, the rest (hello, start, queries, keys...) by type."""
    verbs, steps, others = {}, set(), set()
    for path in VALID:
        msg = parse_client_message(path.read_text(encoding="utf-8"))
        if msg.person_verb() is not None:
            verbs[path.stem.removeprefix("client.")] = msg.person_verb()
        (steps if is_session_request(msg) else others).add(msg.type)
    assert verbs == {
        "approval.decide": "decide approvals",
        "approval.decide-edit": "decide approvals",
        "approval.decide-via": "decide approvals",
        "label-person": "label as a person",
        "session.mode": "set a session's mode",
    }
    assert steps == {"observe", "score", "action", "session.end", "label", "tree.node",
                     "session.mode"}  # fmt: skip
    assert steps | others == CLIENT_TYPES and not steps & others
    assert {m.model_fields["type"].default for m in SESSION_REQUESTS} == steps


def test_the_unions_live_beside_their_members():
    assert union.ClientMessage is requests.ClientMessage
    assert union.ServerMessage is replies.ServerMessage
