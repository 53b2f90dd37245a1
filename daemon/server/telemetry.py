"""Sessions as OpenTelemetry traces over OTLP/HTTP, after the GenAI semantic conventions.

One trace per session: a root span ``invoke_agent {agent}`` (``gen_ai.conversation.id`` =
the session id); per scored step a child span that carries one ``gen_ai.evaluation.result``
event per candidate and becomes ``execute_tool {operation}`` when the step's action is
executed (a step scored but never executed stays ``score_step``); approvals and signals as
events. The daemon only :meth:`OtlpExport.offer`s its published events (never blocks: a
bounded queue, drops counted); a background thread builds the spans with the
``opentelemetry-sdk`` and exports them in batches with the official OTLP/HTTP exporter, so
an unreachable collector slows nothing but this thread. Values typed into password fields
are masked as the export masks them (the session's latest AX tree tells which fields).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, cast
from urllib.parse import urlparse

from pydantic import BaseModel
from webshepherd.daemon.redact import Redactor
from webshepherd.protocol.actions import read_recorded
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.replies import (
    ActionEvent,
    ApprovalRequest,
    ApprovalResolved,
    Observed,
    OtlpStats,
    Scored,
    SessionEnded,
    SessionStarted,
    Signal,
)
from webshepherd.protocol.steps import step_count

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, Span
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.util.types import AttributeValue

log = logging.getLogger(__name__)

EVALUATION_NAME = "webshepherd.process_reward"
_BATCH = 512


def traces_url(endpoint: str) -> str:
    """The collector's traces URL: ``endpoint`` as given, ``/v1/traces`` added to a bare
    ``http(s)://host:port``."""
    u = urlparse(endpoint)
    if u.scheme not in ("http", "https") or not u.netloc:
        raise WebShepherdError(
            f"--otlp-endpoint {endpoint!r}: expected an http(s) URL like http://localhost:4318"
        )
    return endpoint.rstrip("/") + "/v1/traces" if u.path in ("", "/") else endpoint


def parse_headers(pairs: list[str]) -> dict[str, str]:
    """``K=V`` strings (``serve --otlp-headers-file``, ``$OTEL_EXPORTER_OTLP_HEADERS``) as a
    dict."""
    out = {}
    for n, p in enumerate(pairs, 1):
        key, sep, value = p.partition("=")
        if not sep or not key.strip():  # the text itself is not shown: it may be a secret
            raise WebShepherdError(f"OTLP header {n} of {len(pairs)}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


def score_label(reward: float | None, threshold: float | None) -> str:
    """The evaluation's label: ``pass`` at or above the approval threshold, ``fail`` below,
    ``unparsed`` when the judge gave no reward."""
    if reward is None:
        return "unparsed"
    return "pass" if reward >= (threshold if threshold is not None else 0.5) else "fail"


class OtlpExport:
    """Background OTLP/HTTP export of the daemon's session events."""

    def __init__(
        self,
        endpoint: str,
        headers: Mapping[str, str] | None = None,
        *,
        queue_size: int = 4096,
        threshold: float | None = 0.3,
        timeout_s: float = 5.0,
        service_name: str = "webshepherd",
        exporter: SpanExporter | None = None,
    ) -> None:
        """``exporter``: a span exporter to use instead of OTLP/HTTP to ``endpoint`` (an
        ``InMemorySpanExporter`` reads the spans back in tests)."""
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
        except ImportError:
            raise WebShepherdError(
                "--otlp-endpoint needs the OpenTelemetry SDK and OTLP exporter: "
                "pip install '.[otel]' in a clone"
            ) from None

        class Finished(SpanProcessor):
            """Collects ended spans; the worker exports them in batches."""

            def __init__(self) -> None:
                self.spans: list[ReadableSpan] = []

            def on_end(self, span: ReadableSpan) -> None:
                self.spans.append(span)

        self.url = traces_url(endpoint)
        self.exporter: SpanExporter = exporter or OTLPSpanExporter(
            endpoint=self.url, headers=dict(headers or {}), timeout=timeout_s
        )
        self.finished = Finished()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        self.provider.add_span_processor(self.finished)
        self.tracer = self.provider.get_tracer("webshepherd")
        self.threshold = threshold
        self.queue: queue.Queue[tuple[int, BaseModel]] = queue.Queue(maxsize=queue_size)
        self.dropped_events = 0
        self.exported_spans = 0
        self.failed_spans = 0
        # the SDK's spans (the provider is the SDK's): a root's attributes are read back
        self._roots: dict[str, Span] = {}
        self._steps: dict[tuple[str, int], Span] = {}
        self._approval_steps: dict[str, tuple[str, int]] = {}
        self._taken: dict[str, set[int]] = {}  # session -> its steps scored or acted at
        self._pages: dict[str, str] = {}  # session -> its latest AX tree
        self._redactors: dict[str, Redactor] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="otlp-export", daemon=True)

    # -- the daemon's side (event loop; never blocks) --------------------------------
    def start(self) -> None:
        self._thread.start()

    def offer(self, event: BaseModel) -> None:
        """Queue one published event (a protocol model); counted as dropped when full."""
        try:
            self.queue.put_nowait((time.time_ns(), event))
        except queue.Full:
            self.dropped_events += 1

    def stats(self) -> OtlpStats:
        return OtlpStats(
            queued=self.queue.qsize(),
            dropped_events=self.dropped_events,
            exported_spans=self.exported_spans,
            failed_spans=self.failed_spans,
        )

    def close(self, timeout_s: float = 5.0) -> None:
        """Export what is queued (open spans end now), within about ``timeout_s``."""
        self._stop.set()
        self._thread.join(timeout_s)
        self.provider.shutdown()

    # -- the worker thread -------------------------------------------------------------
    def _run(self) -> None:
        while True:
            try:
                t, event = self.queue.get(timeout=0.2)
            except queue.Empty:
                if self._stop.is_set():
                    break
            else:
                try:
                    self._handle(t, event)
                except Exception:
                    kind = getattr(event, "type", type(event).__name__)
                    log.exception("otlp: could not turn a %s event into spans", kind)
            if self.finished.spans and (self.queue.empty() or len(self.finished.spans) >= _BATCH):
                self._export()
        now = time.time_ns()
        for span in [*self._steps.values(), *self._roots.values()]:
            span.end(end_time=now)
        self._steps.clear()
        self._roots.clear()
        if self.finished.spans:
            self._export()

    def _export(self) -> None:
        from opentelemetry.sdk.trace.export import SpanExportResult

        batch, self.finished.spans = self.finished.spans, []
        try:
            ok = self.exporter.export(batch) == SpanExportResult.SUCCESS
        except Exception:
            log.exception("otlp: export failed")
            ok = False
        if ok:
            self.exported_spans += len(batch)
        else:
            self.failed_spans += len(batch)

    def _root(self, session_id: str, t: int, event: SessionStarted | None = None) -> Span:
        root = self._roots.get(session_id)
        if root is None:
            agent = event.agent if event is not None else None
            name = agent.name if agent is not None else "agent"
            attrs: dict[str, AttributeValue] = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": name,
                "gen_ai.conversation.id": session_id,
            }
            for key in ("intent", "start_url", "source"):
                value = getattr(event, key, None)
                if value is not None:
                    attrs[f"webshepherd.{key}"] = value
            root = cast(
                "Span",
                self.tracer.start_span(f"invoke_agent {name}", start_time=t, attributes=attrs),
            )
            self._roots[session_id] = root
        return root

    def _step(self, session_id: str, step: int, t: int) -> Span:
        from opentelemetry.trace import set_span_in_context

        self._taken.setdefault(session_id, set()).add(step)
        span = self._steps.get((session_id, step))
        if span is None:
            span = cast(
                "Span",
                self.tracer.start_span(
                    "score_step",
                    context=set_span_in_context(self._root(session_id, t)),
                    start_time=t,
                    attributes={"gen_ai.conversation.id": session_id, "webshepherd.step": step},
                ),
            )
            self._steps[(session_id, step)] = span
        return span

    def _mask(self, session_id: str, action: str) -> str:
        """``action`` with a value typed into a password field masked."""
        red = self._redactors.setdefault(session_id, Redactor())
        page = self._pages.get(session_id, "")
        red.learn_passwords([(action, page)])
        return red.action(action, page)

    def _text(self, session_id: str, text: str) -> str:
        """A text with the session's known password values masked."""
        red = self._redactors.get(session_id)
        return red.text(text) if red is not None else text

    def _resolved(self, t: int, e: ApprovalResolved) -> None:
        where = self._approval_steps.pop(e.request_id, None)
        if where is None:
            return
        sid, step = where
        span = self._steps.get(where) or self._roots.get(sid)
        if span is not None:
            attrs: dict[str, AttributeValue] = {
                "webshepherd.approval.request_id": e.request_id,
                "webshepherd.approval.decision": e.decision,
                "webshepherd.approval.by": e.by or "",
                "webshepherd.approval.note": self._text(sid, e.note or ""),
                "webshepherd.step": step,
            }
            if e.action:
                attrs["webshepherd.approval.action"] = self._mask(sid, e.action)
            span.add_event("webshepherd.approval.resolved", attrs, timestamp=t)

    def _handle(self, t: int, e: BaseModel) -> None:
        if isinstance(e, ApprovalResolved):
            self._resolved(t, e)
            return
        sid: str | None = getattr(e, "session_id", None)
        if sid is None:
            return
        if isinstance(e, SessionStarted):
            self._root(sid, t, e)
        elif isinstance(e, Observed):
            if e.axtree is not None:
                self._pages[sid] = e.axtree
        elif isinstance(e, Scored):
            self._scored(t, e)
        elif isinstance(e, ApprovalRequest):
            self._approval_steps[e.request_id] = (sid, e.step)
            self._step(sid, e.step, t).add_event(
                "webshepherd.approval.request",
                {
                    "webshepherd.approval.request_id": e.request_id,
                    "webshepherd.approval.reason": e.reason,
                    "webshepherd.candidate.index": e.candidate_index
                    if e.candidate_index is not None
                    else -1,
                    "webshepherd.candidate.action": self._mask(sid, e.candidate.action),
                    **({"webshepherd.reward": e.reward} if e.reward is not None else {}),
                },
                timestamp=t,
            )
        elif isinstance(e, ActionEvent):
            span = self._step(sid, e.step, t)
            del self._steps[(sid, e.step)]
            action = self._mask(sid, e.action)
            parsed = read_recorded(action)
            span.update_name(f"execute_tool {parsed.op or 'action'}")
            span.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": parsed.op or "action",
                    "gen_ai.tool.type": "function",
                    "gen_ai.tool.call.arguments": json.dumps(list(parsed.args)),
                    "webshepherd.action": action,
                    "webshepherd.action.source": e.source,
                }
            )
            span.end(end_time=t)
        elif isinstance(e, Signal):
            root = self._root(sid, t)
            attrs = {
                "webshepherd.signal.kind": e.kind,
                "webshepherd.signal.ok": e.ok,
                "webshepherd.step": e.step,
                "webshepherd.action": self._mask(sid, e.action),
                "webshepherd.signal.detail": self._text(sid, e.detail),
            }
            if e.stalled_steps is not None:
                attrs["webshepherd.signal.stalled_steps"] = e.stalled_steps
            root.add_event("webshepherd.signal", attrs, timestamp=t)
            seen = root.attributes or {}
            if e.kind == "stalled" and "webshepherd.stalled_at_step" not in seen:
                root.set_attribute("webshepherd.stalled_at_step", e.step)  # the first stall
        elif isinstance(e, SessionEnded):
            for key in [k for k in self._steps if k[0] == sid]:
                self._steps.pop(key).end(end_time=t)
            root = self._root(sid, t)
            root.set_attribute("webshepherd.outcome", e.outcome)
            root.set_attribute("webshepherd.steps", step_count(self._taken.pop(sid, ())))
            if e.answer is not None:
                root.set_attribute("webshepherd.answer", e.answer)
            root.end(end_time=t)
            del self._roots[sid]
            self._pages.pop(sid, None)
            self._redactors.pop(sid, None)

    def _scored(self, t: int, e: Scored) -> None:
        span = self._step(e.session_id, e.step, t)
        cands = [self._mask(e.session_id, c.action) for c in e.candidates or []]
        span.set_attribute("webshepherd.decision.status", e.decision.status)
        for r in e.results:
            attrs: dict[str, AttributeValue] = {
                "gen_ai.evaluation.name": EVALUATION_NAME,
                "gen_ai.evaluation.score.label": score_label(r.reward, self.threshold),
                "gen_ai.evaluation.explanation": self._text(e.session_id, r.feedback),
                "webshepherd.candidate.index": r.index,
                "webshepherd.candidate.best": r.index == e.best,
                "webshepherd.candidate.chosen": r.index == e.decision.index,
                "webshepherd.step": e.step,
            }
            if r.reward is not None:
                attrs["gen_ai.evaluation.score.value"] = r.reward
            if r.index < len(cands):
                attrs["webshepherd.candidate.action"] = cands[r.index]
            span.add_event("gen_ai.evaluation.result", attrs, timestamp=t)
