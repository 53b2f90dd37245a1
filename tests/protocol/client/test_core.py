"""The client's sans-I/O core against the protocol's vectors: frames in, outcomes out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from webshepherd.protocol.client.core import (
    ChecklistArrived,
    ClientCore,
    Event,
    Failed,
    Progress,
    Resolved,
)
from webshepherd.protocol.common import ClientInfo
from webshepherd.protocol.errors import (
    ConnectionLostError,
    ErrorCode,
    ProtocolError,
    UnauthorizedError,
)
from webshepherd.protocol.replies import (
    ActionEvent,
    ActionRecorded,
    ApprovalRequest,
    ApprovalResolved,
    CommitDecided,
    Error,
    Observed,
    Pong,
    Scored,
    Session,
    SessionEnded,
    Sessions,
    SessionStarted,
    Subscribed,
    Welcome,
)
from webshepherd.protocol.union import parse_client_message

VECTORS = Path(__file__).resolve().parents[3] / "protocol" / "vectors"

#: Each request vector, the reply vector answering it (same id) and the reply's type.
EXCHANGES = [
    ("client.hello.json", "server.welcome.json", Welcome),
    ("client.session.start.json", "server.session.started.json", SessionStarted),
    ("client.observe.json", "server.observed.json", Observed),
    ("client.score.json", "server.scored.json", Scored),
    ("client.action.json", "server.action.recorded.json", ActionRecorded),
    ("client.approval.decide.json", "server.approval.resolved-reply.json", ApprovalResolved),
    ("client.session.end.json", "server.session.ended.json", SessionEnded),
    ("client.subscribe.json", "server.subscribed.json", Subscribed),
    ("client.sessions.list.json", "server.sessions.json", Sessions),
    ("client.session.get.json", "server.session.json", Session),
    ("client.ping.json", "server.pong.json", Pong),
    ("client.commit.check.json", "server.commit.decided.json", CommitDecided),
]
#: Replies whose request other subscribers see as an event: its type on the wire.
OWN_EVENTS = {
    "server.session.started.json": "session.started",
    "server.observed.json": "observed",
    "server.scored.json": "scored",
    "server.action.recorded.json": "action",
    "server.approval.resolved-reply.json": "approval.resolved",
    "server.session.ended.json": "session.ended",
}
EVENTS = [
    "server.action-event.json",
    "server.approval.request.json",
    "server.approval.resolved.json",
    "server.mode.set.json",
    "server.observed-event.json",
    "server.scored-edited.json",
    "server.session.started-event.json",
    "server.signal.json",
    "server.stats.json",
    "server.stats-cpu.json",
]


def frame(name: str, folder: str = "valid") -> str:
    return (VECTORS / folder / name).read_text(encoding="utf-8")


def core() -> ClientCore:
    return ClientCore(ClientInfo(name="test", version="1", role="agent"))


def waiting_on(c: ClientCore, request: str, expect: type) -> str:
    msg = parse_client_message(frame(request))
    c.sent(msg, expect)
    return msg.id


@pytest.mark.parametrize(("request_file", "reply_file", "expect"), EXCHANGES)
def test_a_reply_resolves_the_call_waiting_on_its_id(request_file, reply_file, expect) -> None:
    c = core()
    rid = waiting_on(c, request_file, expect)
    out = c.receive(frame(reply_file))
    assert isinstance(out[0], Resolved) and out[0].id == rid
    assert type(out[0].reply) is expect and out[0].reply.id == rid  # type: ignore[attr-defined]
    assert c.waiting == 0
    events = [o.message for o in out[1:] if isinstance(o, Event)]
    if reply_file in OWN_EVENTS:
        # The daemon answers the requester only; its subscriptions see the event too.
        (event,) = events
        assert event.type == OWN_EVENTS[reply_file] and getattr(event, "id", None) is None
    else:
        assert events == []
    assert c.receive(frame(reply_file)) == [], "a second reply to the same id is dropped"


def test_own_events_carry_the_request_s_fields() -> None:
    c = core()
    waiting_on(c, "client.action.json", ActionRecorded)
    request = json.loads(frame("client.action.json"))
    _, event = c.receive(frame("server.action.recorded.json"))
    assert isinstance(event, Event) and isinstance(event.message, ActionEvent)
    assert (event.message.action, event.message.thought) == (request["action"], request["thought"])
    waiting_on(c, "client.observe.json", Observed)
    _, observed = c.receive(frame("server.observed.json"))
    assert isinstance(observed, Event) and isinstance(observed.message, Observed)
    assert observed.message.axtree == json.loads(frame("client.observe.json"))["axtree"]


def test_an_error_reply_fails_the_call_with_its_typed_exception() -> None:
    c = core()
    error = json.loads(frame("server.error.json"))
    ping = parse_client_message(frame("client.ping.json"))
    c.sent(ping.model_copy(update={"id": error["id"]}), Pong)
    (out,) = c.receive(frame("server.error.json"))
    assert isinstance(out, Failed) and out.id == error["id"]
    assert out.error.code is ErrorCode(error["code"]) and out.error.message == error["message"]
    assert c.waiting == 0


def test_a_reply_of_the_wrong_type_fails_the_call() -> None:
    c = core()
    waiting_on(c, "client.ping.json", Pong)
    pong = json.loads(frame("server.pong.json"))
    welcome = json.loads(frame("server.welcome.json")) | {"id": pong["id"]}
    (out,) = c.receive(json.dumps(welcome))
    assert isinstance(out, Failed) and isinstance(out.error, ProtocolError)
    assert "expected Pong in reply to 'ping', got Welcome" in out.error.message


@pytest.mark.parametrize("name", EVENTS)
def test_events_go_to_the_subscriptions(name: str) -> None:
    c = core()
    waiting_on(c, "client.score.json", Scored)
    (out,) = c.receive(frame(name))
    assert isinstance(out, Event) and out.message.type == json.loads(frame(name))["type"]
    assert c.waiting == 1


def test_progress_of_a_waiting_score_and_checklists_are_routed() -> None:
    c = core()
    assert [type(o) for o in c.receive(frame("server.score.progress.json"))] == [Event]
    waiting_on(c, "client.score.json", Scored)  # id c9, the progress vector's request
    progress, event = c.receive(frame("server.score.progress.json"))
    assert isinstance(progress, Progress) and progress.message.request == "c9"
    assert isinstance(event, Event)
    arrived, _ = c.receive(frame("server.checklist.json"))
    assert isinstance(arrived, ChecklistArrived)
    assert c.checklists[arrived.checklist.session_id] is arrived.checklist


def test_late_replies_and_frames_the_client_cannot_read_are_dropped() -> None:
    c = core()
    assert c.receive(frame("server.pong.json")) == []  # nobody waits on p1
    for path in sorted((VECTORS / "invalid").glob("server.*.json")):
        assert c.receive(path.read_bytes()) == [], path.name
    assert c.receive(b"\xff not json") == []


def test_an_unauthorized_error_without_id_refuses_the_client_for_good() -> None:
    c = core()
    error = json.loads(frame("server.error-no-id.json"))
    assert error["code"] == "unauthorized"
    other = error | {"code": "overloaded", "message": "busy"}
    (out,) = c.receive(json.dumps(other))
    assert isinstance(out, Event) and c.refused is None  # only a refusal is for good
    (out,) = c.receive(frame("server.error-no-id.json"))
    assert isinstance(out, Event)
    assert isinstance(c.refused, UnauthorizedError) and c.refused.message == error["message"]


def test_a_lost_connection_fails_every_waiting_call() -> None:
    c = core()
    ids = {waiting_on(c, "client.ping.json", Pong), waiting_on(c, "client.score.json", Scored)}
    lost = c.disconnected(1006, url="ws://127.0.0.1:8765/v1")
    assert isinstance(lost, ConnectionLostError) and lost.retryable and c.refused is None
    assert lost.message == (
        "connection to the webshepherd daemon at ws://127.0.0.1:8765/v1 lost (close code 1006, "
        "no close frame: the daemon was killed or the network dropped); a call in flight got "
        "no answer"
    )
    assert "the daemon is stopping" in c.disconnected(1001, "bye").message
    failed = c.fail_all(lost)
    assert {f.id for f in failed} == ids and all(f.error is lost for f in failed)
    assert c.waiting == 0 and c.fail_all(lost) == []
    refused = c.disconnected(1008, "wrong token")
    assert isinstance(refused, UnauthorizedError) and c.refused is refused


def test_ids_are_unique_and_a_forgotten_call_takes_no_reply() -> None:
    c = core()
    ids = [c.next_id("s"), c.next_id("s"), c.hello("tok").id]
    assert len(set(ids)) == 3
    rid = waiting_on(c, "client.ping.json", Pong)
    c.forget(rid)
    assert c.receive(frame("server.pong.json")) == []


def test_a_paused_request_s_wait_and_refusal_are_logged_with_the_way_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A commit.check this client waits on: the person's wait is logged at once, and a
    refusal names who refused and the way out."""
    c = core()
    waiting_on(c, "client.commit.check.json", CommitDecided)
    asked = ApprovalRequest(
        request_id="a1-s1",
        session_id="s1",
        step=0,
        candidate={"action": "click('42')"},
        reward=None,
        reason="commit",
        expires_in_s=120,
    )
    with caplog.at_level("WARNING", logger="webshepherd"):
        c.receive(asked.model_dump_json())
        c.receive(frame("server.commit.decided.json"))
    held, refused = (r.getMessage() for r in caplog.records)
    assert "a paused request of step 1 waits for a person" in held
    assert "the browser paused a request that commits (click('42'))" in held
    assert "nobody deciding in time refuses it" in held
    # where to decide: the extension's panel lists only the sessions its tabs follow
    assert "the extension's side panel only when a tab of the paired browser follows" in held
    assert refused.startswith(
        "webshepherd: paused request POST http://shop.test/orders: refused by daemon (mode ask): "
    )
    assert "— way out: serve --sandbox-origin http://shop.test" in refused


def test_a_handled_daemon_error_is_no_warning_and_an_unhandled_one_is(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A checklist the judge failed to write (no id: every score of the session answers with
    its reason) and a late reply (its caller has had its own error) log at debug; an error
    nobody handles (a refusal with no call waiting) stays a warning."""
    c = core()
    checklist = Error(code=ErrorCode.MODEL_ERROR, message="the model failed to make the checklist")
    late = Error(id="r99", code=ErrorCode.MODEL_ERROR, message="the model failed on this request")
    refused = Error(code=ErrorCode.UNAUTHORIZED, message="token revoked")
    with caplog.at_level("DEBUG", logger="webshepherd"):
        for message in (checklist, late, refused):
            c.receive(message.model_dump_json())
    logged = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert logged == [
        ("DEBUG", "daemon error model_error: the model failed to make the checklist"),
        ("DEBUG", "daemon error model_error: the model failed on this request"),
        ("WARNING", "daemon error unauthorized: token revoked"),
    ]
