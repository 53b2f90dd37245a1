"""``serve --otlp-endpoint``: a real daemon exports a recorded session to a real OTLP/HTTP
receiver on loopback (the protobuf it receives decoded here); an unreachable or hanging
collector never slows scoring, and what it costs shows in ``stats.otlp``."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from webshepherd.daemon.cli import main
from webshepherd.daemon.server.telemetry import parse_headers, score_label, traces_url
from webshepherd.protocol.errors import WebShepherdError

from tests.fixtures.poll import until
from tests.fixtures.report_session import SECRET, record_report_session

PAGES = [
    {
        "url": f"http://shop.local/p{i}",
        "axtree": f"[1] RootWebArea 'P{i}'\n\t[12] button 'Go'\n\t[13] link 'Next'",
    }
    for i in range(3)
] + [  # a page with a password field: candidates_for types the secret into it
    {
        "url": "http://shop.local/cart",
        "axtree": "[1] RootWebArea 'Cart'\n\t[70] textbox 'Password'\n\t[71] button 'Pay'",
    }
]


class Receiver:
    """An OTLP/HTTP trace receiver: decodes every POST to /v1/traces."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.headers: list[dict[str, str]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                receiver.requests.append(req)
                receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()
                self.wfile.write(b"")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def spans(self) -> list:
        return [
            s
            for r in self.requests
            for rs in r.resource_spans
            for ss in rs.scope_spans
            for s in ss.spans
        ]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def attrs(obj) -> dict:
    out = {}
    for kv in obj.attributes:
        v = kv.value
        out[kv.key] = getattr(v, v.WhichOneof("value"))
    return out


async def test_a_session_arrives_as_a_genai_trace(start_daemon, receiver):
    daemon = await start_daemon(otlp_endpoint=receiver.url, otlp_headers=(("x-api-key", "k-123"),))
    agent = await daemon.client()
    approver = await daemon.client(role="extension", name="ext")
    sid = await record_report_session(agent, approver, PAGES)

    def root_arrived() -> bool:
        return any(s.name.startswith("invoke_agent") for s in receiver.spans())

    await until(root_arrived, 30, "the session's root span at the receiver")
    spans = receiver.spans()
    assert all(h.get("x-api-key") == "k-123" for h in receiver.headers)
    assert all(h["content-type"] == "application/x-protobuf" for h in receiver.headers)
    resource = attrs(receiver.requests[0].resource_spans[0].resource)
    assert resource["service.name"] == "webshepherd"

    (root,) = [s for s in spans if s.name.startswith("invoke_agent")]
    assert root.name == "invoke_agent report-bot"
    ra = attrs(root)
    assert ra["gen_ai.operation.name"] == "invoke_agent"
    assert ra["gen_ai.conversation.id"] == sid and ra["gen_ai.agent.name"] == "report-bot"
    assert ra["webshepherd.outcome"] == "success"
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    assert len(tools) == len(PAGES)
    for span in tools:
        a = attrs(span)
        assert span.trace_id == root.trace_id and span.parent_span_id == root.span_id
        assert a["gen_ai.operation.name"] == "execute_tool"
        assert a["webshepherd.action"].startswith(a["gen_ai.tool.name"] + "(")  # click, fill…
        assert span.name == f"execute_tool {a['gen_ai.tool.name']}"
        assert root.start_time_unix_nano <= span.start_time_unix_nano <= span.end_time_unix_nano
        evals = [e for e in span.events if e.name == "gen_ai.evaluation.result"]
        assert len(evals) == 3  # one per scored candidate
        for ev in evals:
            ea = attrs(ev)
            assert ea["gen_ai.evaluation.name"] == "webshepherd.process_reward"
            assert ea["gen_ai.evaluation.score.label"] in ("pass", "fail", "unparsed")
            assert isinstance(ea["gen_ai.evaluation.explanation"], str)
            if ea["gen_ai.evaluation.score.label"] != "unparsed":
                assert 0.0 <= ea["gen_ai.evaluation.score.value"] <= 1.0
        assert sum(attrs(ev)["webshepherd.candidate.chosen"] for ev in evals) == 1
    approved = [
        s for s in tools if any(e.name.startswith("webshepherd.approval") for e in s.events)
    ]
    assert len(approved) == 1
    names = [e.name for e in approved[0].events]
    assert "webshepherd.approval.request" in names and "webshepherd.approval.resolved" in names
    resolved = next(e for e in approved[0].events if e.name == "webshepherd.approval.resolved")
    ra = attrs(resolved)
    assert ra["webshepherd.approval.decision"] == "approve"
    assert ra["webshepherd.approval.note"] == "looks right to me"
    assert ra["webshepherd.approval.by"] == "extension:ext"
    received = b"".join(r.SerializeToString() for r in receiver.requests)
    assert SECRET.encode() not in received and b"[REDACTED]" in received  # the password
    assert daemon.server.telemetry is not None
    st = daemon.server.telemetry.stats()
    assert st.exported_spans == len(spans) and st.failed_spans == 0 and st.dropped_events == 0


@contextlib.contextmanager
def black_hole() -> Iterator[str]:
    """A TCP port that accepts connections and never answers (a hung collector)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    conns: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                conns.append(sock.accept()[0])

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        stop.set()
        t.join()
        for c in conns:
            c.close()
        sock.close()


async def test_a_hung_collector_costs_drops_not_latency(start_daemon):
    with black_hole() as url:
        daemon = await start_daemon(otlp_endpoint=url, otlp_queue_size=3)
        monitor = await daemon.client(role="monitor", name="m")
        assert (await monitor.request({"type": "subscribe", "sessions": "*"}))["type"] == (
            "subscribed"
        )
        agent = await daemon.client()
        approver = await daemon.client(role="extension", name="ext")
        started = time.monotonic()
        await record_report_session(agent, approver, PAGES)
        took = time.monotonic() - started
        assert took < 60  # the export's 5 s timeouts are on its own thread, not here

        def otlp_drops(m: dict) -> bool:
            return m.get("type") == "stats" and (m.get("otlp") or {}).get("dropped_events", 0) > 0

        stats = await monitor.wait_for(otlp_drops, timeout=30)
        assert stats["otlp"]["exported_spans"] == 0
        assert daemon.server.telemetry is not None
        assert daemon.server.telemetry.stats().dropped_events > 0


def test_endpoint_and_header_parsing():
    assert traces_url("http://localhost:4318") == "http://localhost:4318/v1/traces"
    assert traces_url("https://x.example/otlp/v1/traces") == "https://x.example/otlp/v1/traces"
    with pytest.raises(WebShepherdError, match="expected an http"):
        traces_url("localhost:4318")
    assert parse_headers(["a=b", "Authorization=Bearer x=y"]) == {
        "a": "b",
        "Authorization": "Bearer x=y",
    }
    with pytest.raises(WebShepherdError, match="KEY=VALUE"):
        parse_headers(["nope"])
    assert score_label(None, 0.3) == "unparsed"
    assert score_label(0.3, 0.3) == "pass" and score_label(0.29, 0.3) == "fail"


def test_serve_refuses_a_bad_endpoint_before_loading(capsys):
    assert main(["serve", "--otlp-endpoint", "4318", "--model", "nowhere"]) == 1
    assert "--otlp-endpoint '4318'" in capsys.readouterr().err


def test_stalled_signals_mark_the_root_span(receiver):
    """The first ``stalled`` signal marks the session's root span; each is an event with its
    count (events offered straight to the exporter: no model involved)."""
    from webshepherd.daemon.server.telemetry import OtlpExport
    from webshepherd.protocol.common import AgentInfo
    from webshepherd.protocol.replies import SessionEnded, SessionStarted, Signal

    export = OtlpExport(receiver.url)
    export.start()
    export.offer(SessionStarted(session_id="s1", intent="Buy", agent=AgentInfo(name="a")))
    for step, count in ((0, 1), (1, 2)):
        detail = f"no checklist item advanced for {count} executed steps"
        export.offer(
            Signal(
                session_id="s1",
                step=step,
                kind="stalled",
                action="scroll(0, 200)",
                ok=False,
                stalled_steps=count,
                detail=detail,
            )
        )
    export.offer(SessionEnded(session_id="s1", outcome="failure"))
    export.close()
    (root,) = [s for s in receiver.spans() if s.name.startswith("invoke_agent")]
    assert attrs(root)["webshepherd.stalled_at_step"] == 0  # the first stall, even at step 0
    events = [attrs(e) for e in root.events if e.name == "webshepherd.signal"]
    assert [
        (e["webshepherd.signal.kind"], e["webshepherd.signal.stalled_steps"]) for e in events
    ] == [
        ("stalled", 1),
        ("stalled", 2),
    ]
