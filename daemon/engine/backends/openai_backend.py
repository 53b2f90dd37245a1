"""A backend that scores through an OpenAI-compatible server (``vllm serve``, a load balancer…).

Prompts are rendered here (the tokenizer's chat template when one is given, else ChatML, the
Qwen format the Web-Shepherd models use) and sent to ``POST {base_url}/completions`` — all K
candidates' prompts in one request, ``n`` samples each, ``logprobs=k`` — so a server with
prefix caching (vLLM's automatic prefix caching) prefills the shared prefix once. Label
probabilities come from the top-k log-probabilities at each generated token:
``label_source="top_k"`` (a truncation: label tokens outside the top k count 0).

With ``stream=True`` (the default) the reply arrives as server-sent events: text deltas reach
``on_delta`` as they come, logprobs are accumulated from the chunks, and ``cancel`` closes the
HTTP response (a server such as vLLM then aborts the request). :meth:`OpenAIBackend.judge_many`
sends independent batches as concurrent requests: the server batches across them.

Without a tokenizer, token counts are an over-estimate from the UTF-8 length (fitting the AX
tree to ``max_context`` stays on the safe side).

A request that fails in transit or on the server's side (connection refused or reset, a stream
that ends before ``data: [DONE]``, HTTP 5xx, a timeout: a replica behind a router died) is sent
again after ``retry_delays_s``; a retried stream passes on only the text beyond what ``on_delta``
already had. When every retry fails the step is a ``ModelError`` (``OverloadedError`` for 503 and
429), which the agent can retry. :meth:`OpenAIBackend.health` says whether the server answers,
the requests in flight, the retries, and the server's own counters where it publishes vLLM's
Prometheus metrics (:mod:`.remote_health`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from webshepherd.daemon.engine.backends.base import (
    Backend,
    DeltaCallback,
    GeneratedToken,
    Generation,
    JudgeBatch,
    JudgeOutput,
)
from webshepherd.daemon.engine.backends.remote_health import RemoteHealth
from webshepherd.daemon.engine.backends.tokenizer_text import encode_plain, render_chat_template
from webshepherd.daemon.engine.backends.topk import label_group, piece_token
from webshepherd.daemon.engine.sampling import NO_SAMPLING, Sampling
from webshepherd.protocol.errors import ModelError, OverloadedError

if TYPE_CHECKING:
    from http.client import HTTPResponse

    from transformers import PreTrainedTokenizerBase

log = logging.getLogger(__name__)

__all__ = ["CHATML", "OpenAIBackend", "StreamedChoices", "label_group", "usage_counts"]

CHATML = "<|im_start|>{role}\n{content}<|im_end|>\n"


T = TypeVar("T")


class _Transient(Exception):
    """A failure worth another try: the connection, the stream, a timeout, or HTTP 5xx."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def _logged(failed: str, exc: Exception) -> str:
    """``failed`` with ``exc``'s type for the client; its text (paths, addresses) only logged."""
    log.info("%s: %s", failed, exc)
    return f"{failed} ({type(exc).__name__})"


class _RateLimited(Exception):
    """A 429, with the server's ``Retry-After`` (seconds) and message when it gave them."""

    def __init__(self, e: urllib.error.HTTPError) -> None:
        super().__init__("HTTP 429")
        self.retry_after: float | None = None
        with contextlib.suppress(TypeError, ValueError):
            self.retry_after = float(e.headers.get("Retry-After") or "")
        self.detail = ""
        with contextlib.suppress(Exception):
            self.detail = str(json.loads(e.read())["error"]["message"])[:200]


@dataclass
class _Choice:
    parts: list[str] = field(default_factory=list)
    tokens: list[GeneratedToken] = field(default_factory=list)
    finish: str | None = None


class StreamedChoices:
    """Completions rebuilt from streamed chunks (plain dicts in, :class:`Generation` out)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._choices = [_Choice() for _ in range(count)]
        self.usage: dict[str, Any] = {}

    def add(self, chunk: dict[str, Any]) -> list[tuple[int, str]]:
        """Fold one chunk in; returns its ``(choice index, text delta)`` pairs."""
        if isinstance(chunk.get("error"), dict):
            message = str(chunk["error"].get("message", ""))[:200]
            raise ModelError(f"the model server failed mid-stream: {message}")
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        deltas: list[tuple[int, str]] = []
        for c in chunk.get("choices") or []:
            i = int(c.get("index", 0))
            if not 0 <= i < self.count:
                raise ModelError(f"the model server streamed choice {i} of {self.count}")
            choice = self._choices[i]
            text = str(c.get("text") or "")
            if text:
                choice.parts.append(text)
                deltas.append((i, text))
            lp = c.get("logprobs") or {}
            tops = list(lp.get("top_logprobs") or [])
            for j, piece in enumerate(lp.get("tokens") or []):
                choice.tokens.append(piece_token(piece, tops[j] if j < len(tops) else None))
            if c.get("finish_reason"):
                choice.finish = str(c["finish_reason"])
        return deltas

    def generations(self, aborted: bool = False) -> list[Generation]:
        """One :class:`Generation` per choice; unfinished ones are "aborted" when ``aborted``."""
        out = []
        for c in self._choices:
            finish = c.finish or ("aborted" if aborted else "length")
            out.append(
                Generation(
                    text="".join(c.parts),
                    tokens=tuple(c.tokens),
                    finish_reason=finish if finish in ("stop", "aborted") else "length",
                )
            )
        return out


def usage_counts(usage: dict[str, Any], generated: int) -> tuple[int, int, bool]:
    """``(prefilled, generated, prefix_shared)`` from a reply's ``usage``.

    Servers that report ``prompt_tokens_details.cached_tokens`` (vLLM with
    ``--enable-prompt-tokens-details``) say how much of the prompts came from their prefix
    cache; without it nothing here can tell, and every prompt token counts as prefilled.
    ``generated`` (the tokens received) stands in when ``completion_tokens`` is missing.
    """
    prompt = int(usage.get("prompt_tokens") or 0)
    details = usage.get("prompt_tokens_details")
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    completion = usage.get("completion_tokens")
    return (
        max(0, prompt - cached),
        int(completion) if completion is not None else generated,
        cached > 0,
    )


class OpenAIBackend(Backend):
    name = "openai"
    endpoint = "completions"
    # waits before each retry of a request the server answered 429 (then ``OverloadedError``)
    # or that failed in transit or with 5xx (then ``ModelError``; ``OverloadedError`` for 503)
    retry_delays_s: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        tokenizer: PreTrainedTokenizerBase | None = None,
        max_context: int = 10000,
        top_logprobs: int = 20,
        timeout_s: float = 300.0,
        stream: bool = True,
        max_concurrency: int = 8,
        sampling: Sampling = NO_SAMPLING,
    ) -> None:
        """``sampling``: the checkpoint's settings, sent with every request (what vLLM's server
        applies from the model's generation config anyway; a server that does not read it gets
        them explicitly)."""
        self.base_url = base_url.rstrip("/")
        self.sampling = sampling
        self.model_id = model
        self.api_key = api_key
        self.tokenizer = tokenizer
        self._max_context = max_context
        self.top_logprobs = top_logprobs
        self.timeout_s = timeout_s
        self.stream = stream
        self.max_concurrency = max(1, max_concurrency)
        self.remote = RemoteHealth(self.base_url, api_key)

    # -- Backend interface -------------------------------------------------------------

    @property
    def max_context(self) -> int:
        return self._max_context

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        if self.tokenizer is not None:
            return render_chat_template(self.tokenizer, messages)
        text = "".join(CHATML.format(role=m["role"], content=m["content"]) for m in messages)
        return text + "<|im_start|>assistant\n"

    def count_tokens(self, text: str) -> int:
        if self.tokenizer is not None:
            return len(encode_plain(self.tokenizer, text))
        return len(text.encode("utf-8")) // 2 + 1  # over-estimate: BPE averages 3-4 bytes/token

    def generate(
        self, prompt: str, max_new_tokens: int, temperature: float = 0.0, stop: Sequence[str] = ()
    ) -> str:
        reply = self._complete(
            {
                "prompt": prompt,
                "max_tokens": max_new_tokens,
                "temperature": temperature,
                "stop": list(stop) or None,
                **self.sampling.request_fields(),
            }
        )
        return str(reply["choices"][0]["text"])

    @staticmethod
    def _opening(
        batch: JudgeBatch, cancel: threading.Event | None
    ) -> tuple[int, int, JudgeOutput | None]:
        """A judge call's samples per candidate and candidates, and its answer when nothing
        is to be asked: no candidate, or cancelled before the first request (each aborted)."""
        n, k = max(1, batch.samples), len(batch.suffixes)
        if not k:
            return n, k, JudgeOutput((), 0, 0, False, "top_k")
        if cancel is not None and cancel.is_set():
            aborted = Generation(text="", tokens=(), finish_reason="aborted")
            return n, k, JudgeOutput(tuple((aborted,) * n for _ in range(k)), 0, 0, False, "top_k")
        return n, k, None

    def judge(
        self,
        batch: JudgeBatch,
        on_delta: DeltaCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> JudgeOutput:
        n, k, answered = self._opening(batch, cancel)
        if answered is not None:
            return answered
        body = {
            "prompt": [batch.prefix + s for s in batch.suffixes],
            "n": n,
            "max_tokens": batch.max_new_tokens,
            "temperature": batch.temperature_used,
            "stop": list(batch.stop) or None,
            "logprobs": self.top_logprobs,
            **self.sampling.request_fields(),
        }
        if self.stream:
            flat, usage = self._judge_streamed(body, k * n, n, on_delta, cancel)
        else:
            flat, usage = self._judge_whole(body, k * n, n, on_delta)
        gens = tuple(tuple(flat[c * n : (c + 1) * n]) for c in range(k))
        self.remote.add_usage(usage)
        prefilled, generated, shared = usage_counts(usage, sum(len(g.tokens) for g in flat))
        return JudgeOutput(
            generations=gens,
            prefilled_tokens=prefilled,
            generated_tokens=generated,
            prefix_shared=shared,
            label_source="top_k",
        )

    def judge_many(
        self,
        batches: Sequence[JudgeBatch],
        on_deltas: Sequence[DeltaCallback | None],
        cancels: Sequence[threading.Event | None],
    ) -> list[JudgeOutput | Exception]:
        """Each batch as its own request, up to ``max_concurrency`` at once (the server batches
        across them). ``on_deltas[i]`` is called from a worker thread of this call."""
        if not batches:
            return []

        def one(i: int) -> JudgeOutput | Exception:
            try:
                return self.judge(batches[i], on_deltas[i], cancels[i])
            except Exception as e:
                return e

        workers = min(len(batches), self.max_concurrency)
        with ThreadPoolExecutor(workers, thread_name_prefix="openai-judge") as pool:
            return list(pool.map(one, range(len(batches))))

    def health(self) -> dict[str, object]:
        """The backend's facts, and under ``remote`` the server's (:meth:`RemoteHealth.read`:
        probed at most every few seconds)."""
        return {
            "backend": self.name,
            "model": self.model_id,
            "base_url": self.base_url,
            "top_logprobs": self.top_logprobs,
            "label_source": "top_k",
            "stream": self.stream,
            "remote": self.remote.read(),
        }

    # -- internals ---------------------------------------------------------------------

    def _judge_whole(
        self, body: dict[str, Any], count: int, n: int, on_delta: DeltaCallback | None
    ) -> tuple[list[Generation], dict[str, Any]]:
        reply = self._complete(body)
        choices = sorted(reply.get("choices") or [], key=lambda c: int(c.get("index", 0)))
        if len(choices) != count:
            raise ModelError(
                f"the server returned {len(choices)} completions, expected {count} "
                f"({count // n} x {n})"
            )
        folded = StreamedChoices(count)
        folded.add({"choices": choices})
        flat = folded.generations()
        if on_delta is not None:
            for i, g in enumerate(flat):
                if g.text:
                    on_delta(i // n, i % n, g.text)
        return flat, reply.get("usage") or {}

    def _judge_streamed(
        self,
        body: dict[str, Any],
        count: int,
        n: int,
        on_delta: DeltaCallback | None,
        cancel: threading.Event | None,
    ) -> tuple[list[Generation], dict[str, Any]]:
        def delta(i: int, text: str) -> None:
            if on_delta is not None:
                on_delta(i // n, i % n, text)

        folded, cancelled, _ = self._stream_choices(body, count, delta, cancel)
        return folded.generations(aborted=cancelled), folded.usage

    def _stream_choices(
        self,
        body: dict[str, Any],
        count: int,
        on_delta: Callable[[int, str], None],
        cancel: threading.Event | None,
        convert: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> tuple[StreamedChoices, bool, int]:
        """One streamed request folded into ``count`` choices (``convert`` turns each chunk into
        the completions shape): ``(folded, cancelled, choices seen)``. A retry after a broken
        stream starts the fold anew and passes ``on_delta`` only the text it had not sent."""
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        sent: dict[int, int] = {}  # characters of each choice already given to on_delta

        def attempt() -> tuple[StreamedChoices, bool, int]:
            folded = StreamedChoices(count)
            got: dict[int, int] = {}
            seen = 0
            for chunk in self._events(body, cancel):
                if chunk is None:  # cancelled: the response is closed
                    return folded, True, seen
                if convert is not None:
                    chunk = convert(chunk)
                for c in chunk.get("choices") or []:
                    seen = max(seen, int(c.get("index") or 0) + 1)
                for i, text in folded.add(chunk):
                    before = got.get(i, 0)
                    got[i] = before + len(text)
                    fresh = text[max(0, sent.get(i, 0) - before) :]
                    if fresh:
                        sent[i] = got[i]
                        on_delta(i, fresh)
            return folded, False, seen

        return self._attempts(attempt)

    def _request(self, body: dict[str, Any]) -> urllib.request.Request:
        payload = {k: v for k, v in {"model": self.model_id, **body}.items() if v is not None}
        return urllib.request.Request(
            f"{self.base_url}/{self.endpoint}",
            data=json.dumps(payload).encode(),
            headers={
                "Content-Type": "application/json",
                **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}),
            },
            method="POST",
        )

    def _attempts(self, run: Callable[[], T]) -> T:
        """``run()`` (one request, sent and read) until it succeeds: a 429 is retried after
        ``retry_delays_s`` (or the server's ``Retry-After``, at most 30 s), then
        ``OverloadedError``; a transient failure after ``retry_delays_s``, then ``ModelError``
        (``OverloadedError`` for 503)."""
        with self.remote.request():
            for delay in (*self.retry_delays_s, None):
                try:
                    result = run()
                except _RateLimited as e:
                    if delay is None:
                        self.remote.failed("HTTP 429")
                        raise OverloadedError(
                            f"the model server at {self.base_url} is rate-limiting (HTTP 429 "
                            f"after {len(self.retry_delays_s)} retries)"
                            f"{': ' + e.detail if e.detail else ''}"
                        ) from None
                    wait = min(30.0, e.retry_after) if e.retry_after is not None else delay
                    log.info("the model server answered 429; retrying in %.1f s", wait)
                except _Transient as e:
                    if delay is None:
                        self.remote.failed(e.message)
                        error = OverloadedError if e.status == 503 else ModelError
                        raise error(
                            f"{e.message} (after {len(self.retry_delays_s)} retries)"
                        ) from None
                    wait = delay
                    log.warning("%s; retrying in %.1f s", e.message, wait)
                else:
                    self.remote.succeeded()
                    return result
                self.remote.retried()
                time.sleep(wait)
        raise AssertionError("unreachable")

    def _open(self, req: urllib.request.Request) -> HTTPResponse:
        """The server's response; ``_RateLimited``, ``_Transient`` or ``ModelError``."""
        try:
            resp: HTTPResponse = urllib.request.urlopen(req, timeout=self.timeout_s)
            return resp
        except urllib.error.HTTPError as e:
            if e.code == 429:
                raise _RateLimited(e) from e
            detail = ""
            with contextlib.suppress(Exception):
                detail = str(json.loads(e.read())["error"]["message"])[:200]
            message = f"the model server answered HTTP {e.code}" + (f": {detail}" if detail else "")
            if e.code >= 500:
                raise _Transient(message, e.code) from e
            raise ModelError(message) from e
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            reason = getattr(e, "reason", None)
            cause = reason if isinstance(reason, Exception) else e
            why = f"the model server at {self.base_url} is unreachable"
            raise _Transient(_logged(why, cause)) from e

    def _events(
        self, body: dict[str, Any], cancel: threading.Event | None
    ) -> Iterator[dict[str, Any] | None]:
        """The stream's JSON chunks until ``data: [DONE]``; ``None`` (once) when cancelled."""
        resp = self._open(self._request(body))
        with resp:
            while True:
                if cancel is not None and cancel.is_set():
                    yield None
                    return
                try:
                    line = resp.readline()
                except (TimeoutError, OSError) as e:
                    raise _Transient(_logged("the model server's stream broke off", e)) from e
                if not line:
                    raise _Transient("the model server closed the stream before data: [DONE]")
                line = line.strip()
                if not line.startswith(b"data:"):
                    continue  # blank separators, comments, other SSE fields
                data = line[5:].strip()
                if data == b"[DONE]":
                    return
                try:
                    chunk = json.loads(data)
                except ValueError as e:
                    raise ModelError("the model server streamed a chunk that is not JSON") from e
                if isinstance(chunk, dict):
                    yield chunk

    def _complete(self, body: dict[str, Any]) -> dict[str, Any]:
        def attempt() -> bytes:
            try:
                with self._open(self._request(body)) as resp:
                    return bytes(resp.read())
            except (TimeoutError, OSError) as e:
                why = f"the model server at {self.base_url} broke off"
                raise _Transient(_logged(why, e)) from e

        raw = self._attempts(attempt)
        try:
            reply = json.loads(raw)
        except ValueError as e:
            raise ModelError(
                f"the model server's reply is not JSON (it began {raw[:120]!r})"
            ) from e
        if not isinstance(reply, dict) or not isinstance(reply.get("choices"), list):
            raise ModelError(
                f"the model server's reply has no 'choices' (it said {json.dumps(reply)[:160]})"
            )
        return reply
