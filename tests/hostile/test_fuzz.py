"""Property-based fuzz of the protocol parser (issue 14): arbitrary JSON and arbitrary bytes,
to the parser and, over real sockets, to a real daemon before and after ``hello``. Whatever
arrives: an ``error`` or a reply, never a 1011 close, never a traceback in the log, and an
authenticated connection stays usable."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from webshepherd.daemon.build import build_daemon
from webshepherd.daemon.config import Settings
from webshepherd.daemon.server.handshake import PREAUTH_FRAME_BYTES
from webshepherd.protocol.errors import ProtocolError
from webshepherd.protocol.union import CLIENT_TYPES, parse_client_message, request_id_of
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.fixtures.daemon import TEST_TOKEN, make_settings

# text with lone surrogates too: json.dumps writes them as \\ud800 escapes
any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | any_text,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=30,
)
# objects that look like messages: a real type, an id, random other fields
messages = st.builds(
    lambda t, rid, rest: {**rest, "type": t, "id": rid},
    st.sampled_from(sorted(CLIENT_TYPES)),
    any_text | st.integers(),
    st.dictionaries(
        st.sampled_from(
            [
                "session_id",
                "candidates",
                "observation",
                "url",
                "axtree",
                "limit",
                "sessions",
                "decision",
                "request_id",
                "samples",
                "protocol",
                "token",
            ]
        ),
        json_values,
        max_size=4,
    ),
)
big = st.integers(300, 6000)  # digits of a JSON number (json.dumps cannot write them)
deep = st.integers(1, 100_000).map(lambda n: "[" * n + "]" * n)
frames = (
    deep
    | st.builds(lambda v, d: json.dumps(v)[:-1] + ', "x": ' + d + "}", messages, deep)
    | st.builds(lambda v, n: json.dumps(v)[:-1] + ', "n": ' + "9" * n + "}", messages, big)
    | json_values.map(json.dumps)
    | messages.map(json.dumps)
    | st.binary(max_size=200)
    | st.text(max_size=200)
    | json_values.map(lambda v: json.dumps(v)[:-1])  # cut short
)


@settings(max_examples=400, deadline=None)
@given(frames)
def test_the_parser_refuses_with_protocol_error_only(frame: str | bytes) -> None:
    request_id_of(frame)  # never raises
    try:
        parse_client_message(frame)
    except ProtocolError as exc:
        assert exc.message and "Traceback" not in exc.message


class ThreadDaemon:
    """A real daemon on its own event loop in a thread, for synchronous hypothesis tests."""

    def __init__(self, settings: Settings, engine: Any):
        self.loop = asyncio.new_event_loop()
        self.server = build_daemon(settings, engine)
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(30)

    def connect(self) -> ClientConnection:
        return connect(self.server.url, open_timeout=10, max_size=None)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def fuzz_daemon(tmp_path_factory, daemon_engine) -> Iterator[ThreadDaemon]:
    d = ThreadDaemon(make_settings(tmp_path_factory.mktemp("fuzz")), daemon_engine)
    yield d
    d.stop()


@pytest.fixture(scope="module")
def authed(fuzz_daemon: ThreadDaemon) -> Iterator[ClientConnection]:
    with fuzz_daemon.connect() as ws:
        hello = {
            "type": "hello",
            "id": "h",
            "protocol": 1,
            "token": TEST_TOKEN,
            "client": {"name": "fuzz", "version": "1", "role": "monitor"},
        }
        ws.send(json.dumps(hello))
        assert json.loads(ws.recv(10))["type"] == "welcome"
        yield ws


class LogWatch(logging.Handler):
    """Every record at ERROR or with an exception, from any thread."""

    def __init__(self) -> None:
        super().__init__()
        self.bad: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            self.bad.append(f"{record.name}: {record.getMessage()}")


@pytest.fixture
def log_watch() -> Iterator[LogWatch]:
    watch = LogWatch()
    root = logging.getLogger()
    root.addHandler(watch)
    yield watch
    root.removeHandler(watch)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(frame=frames)
def test_after_hello_anything_gets_an_answer_and_the_connection_stays(
    authed: ClientConnection, log_watch: LogWatch, frame: str | bytes
) -> None:
    authed.send(frame)
    authed.send(json.dumps({"type": "ping", "id": "fuzz-ping"}))
    while True:  # the frame's answer (if any), events, then our pong
        msg = json.loads(authed.recv(10))
        if msg.get("id") == "fuzz-ping" and msg["type"] == "pong":
            break
    assert not log_watch.bad, log_watch.bad


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(frame=frames)
def test_before_hello_anything_else_is_refused_with_1008(
    fuzz_daemon: ThreadDaemon, log_watch: LogWatch, frame: str | bytes
) -> None:
    """An error and 1008, or 1009 for a frame over the small pre-auth limit."""
    with fuzz_daemon.connect() as ws:
        ws.send(frame)
        with pytest.raises(ConnectionClosed) as info:
            while True:
                msg = json.loads(ws.recv(10))
                assert msg["type"] == "error"
                assert msg["code"] in ("invalid_message", "unauthorized")
    assert info.value.rcvd is not None
    assert info.value.rcvd.code == (1009 if len(frame) > PREAUTH_FRAME_BYTES else 1008)
    assert not log_watch.bad, log_watch.bad
