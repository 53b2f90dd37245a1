"""An OpenAI-compatible HTTP endpoint over a transformers model (``/v1/completions``).

    python -m webshepherd.daemon.dev.openai_server --model PATH [--host 127.0.0.1] [--port 8001]

What :class:`~webshepherd.daemon.engine.backends.openai_backend.OpenAIBackend` needs of
``vllm serve``, served by the project's own transformers model: ``GET /v1/models``,
``POST /v1/chat/completions`` (``messages`` through the model's chat template, ``logprobs``,
``top_logprobs``, answers with ``logprobs.content``, streamed as ``delta`` chunks) and
``POST /v1/completions``
with a rendered ``prompt`` (a string or a list), ``n``, ``max_tokens``, ``temperature``,
``stop``, ``seed`` and ``logprobs`` (top-k log-probabilities of the model's raw distribution
at every generated token, legacy completions format: ``tokens``, ``token_logprobs``,
``top_logprobs``, ``text_offset``), and ``stream: true`` (server-sent events, one chunk per
generated token with its logprobs, ``stream_options.include_usage``, then ``data: [DONE]``;
a client that disconnects stops its generation). Prompts are processed one after another, the
``n`` samples of a prompt in one batch. Loopback by default; ``--api-key-env VAR`` requires
``Authorization: Bearer`` with the key held in that environment variable.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import os
import threading
from collections.abc import Callable
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from webshepherd.daemon.dev.openai_completer import (
    MAX_LOGPROBS,
    Completer,
    CompletionParams,
    RequestError,
    chat_as_completion,
    chat_chunk,
    chat_reply,
)
from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend
from webshepherd.daemon.secrets import refuse_flag

__all__ = ["MAX_BODY_BYTES", "MAX_LOGPROBS", "Completer", "OpenAIServer", "RequestError", "main"]

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024 * 1024


def _same(payload: dict[str, Any]) -> dict[str, Any]:
    return payload


def _handler(completer: Completer, api_key: str | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "webshepherd-openai/1"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s " + format, self.address_string(), *args)

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str) -> None:
            kind = "invalid_request_error" if status < 500 else "server_error"
            self._send(status, {"error": {"message": message, "type": kind, "code": status}})

        def _authorized(self) -> bool:
            if api_key is None:
                return True
            if self.headers.get("Authorization", "") == f"Bearer {api_key}":
                return True
            self._error(401, "missing or wrong API key")
            return False

        def _stream(
            self, params: CompletionParams, convert: Callable[[dict[str, Any]], dict[str, Any]]
        ) -> None:
            """Server-sent events until ``data: [DONE]``; the connection closes after it."""
            chunks = (convert(c) for c in completer.stream(params))
            try:
                first = next(chunks, None)  # request errors surface before the headers
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    for chunk in itertools.chain([first] if first else [], chunks):
                        self._event(chunk)
                    self.wfile.write(b"data: [DONE]\n\n")
                except OSError:  # the client went away (a cancelled score): stop generating
                    completer.disconnects += 1
                    log.debug("stream client disconnected")
                except Exception as e:  # the headers are out: report in the stream
                    log.exception("streamed completion failed")
                    with contextlib.suppress(OSError):
                        message = f"the model failed ({type(e).__name__})"
                        self._event({"error": {"message": message, "type": "server_error"}})
            finally:
                chunks.close()

        def _event(self, payload: dict[str, Any]) -> None:
            self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")

        def do_GET(self) -> None:
            if not self._authorized():
                return
            if self.path.rstrip("/") == "/v1/models":
                model = {
                    "id": completer.model_id,
                    "object": "model",
                    "owned_by": "webshepherd",
                    "max_model_len": completer.backend.max_context,
                }
                self._send(200, {"object": "list", "data": [model]})
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            if not self._authorized():
                return
            route = self.path.rstrip("/")
            if route not in ("/v1/completions", "/v1/chat/completions"):
                self._error(404, f"no route {self.path}")
                return
            try:
                size = int(self.headers.get("Content-Length", "0"))
                if not 0 < size <= MAX_BODY_BYTES:
                    raise RequestError(400, "a JSON body is required (at most 64 MiB)")
                body = json.loads(self.rfile.read(size))
                if not isinstance(body, dict):
                    raise RequestError(400, "the body must be a JSON object")
                model = body.get("model")
                if model not in (None, completer.model_id):
                    raise RequestError(404, f"model {model!r} is not served here")
                if route == "/v1/chat/completions":
                    body = chat_as_completion(
                        body, completer.backend.render_chat, completer.backend
                    )
                    k = int(body.pop("_top_logprobs"))
                    whole: Callable[[dict[str, Any]], dict[str, Any]] = partial(chat_reply, k=k)
                    part: Callable[[dict[str, Any]], dict[str, Any]] = partial(chat_chunk, k=k)
                else:
                    whole = part = _same
                if body.get("stream"):
                    self._stream(completer.params(body), part)
                else:
                    self._send(200, whole(completer.complete(body)))
            except RequestError as e:
                self._error(e.status, str(e))
            except ValueError as e:
                self._error(400, f"bad request: {e}")
            except Exception as e:
                log.exception("completion failed")
                self._error(500, f"the model failed ({type(e).__name__})")

    return Handler


class OpenAIServer:
    """``start()`` serves in a background thread; ``url`` is the base (``…/v1``)."""

    def __init__(
        self,
        backend: TransformersBackend,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
    ) -> None:
        self.completer = Completer(backend)
        self.httpd = ThreadingHTTPServer((host, port), _handler(self.completer, api_key))
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        addr = self.httpd.server_address
        host, port = str(addr[0]), int(addr[1])
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}/v1"

    def start(self) -> None:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--model", required=True, help="a Hugging Face id or a local folder")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8001)
    ap.add_argument("--device", default="auto")
    ap.add_argument(
        "--api-key-env",
        default=None,
        metavar="VAR",
        help="require 'Authorization: Bearer KEY', KEY read from this environment variable",
    )
    refuse_flag(ap, "--api-key", "name the environment variable holding it with --api-key-env VAR")
    args = ap.parse_args(argv)
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            ap.error(f"--api-key-env {args.api_key_env}: that environment variable is not set")
    logging.basicConfig(level=logging.INFO)
    server = OpenAIServer(
        TransformersBackend.load(args.model, device=args.device),
        args.host,
        args.port,
        api_key,
    )
    print(f"serving {args.model} at {server.url}", flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
