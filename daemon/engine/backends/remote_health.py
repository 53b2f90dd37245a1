"""A remote model server as the daemon sees it: reachable or not, requests in flight, retries,
and the server's own counters where it publishes vLLM's Prometheus metrics (``GET /metrics``
at the server's root: requests running and waiting, prefix-cache queries and hits, in tokens).

The replies' ``usage.prompt_tokens_details.cached_tokens`` (``vllm serve
--enable-prompt-tokens-details``) are counted too. Behind ``vllm-router`` (0.1.17) neither is
there: ``/metrics`` is the router's own, and the replies it passes on carry no cached-token
count; each replica's own ``/metrics`` has its cache figures.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

#: vLLM's metric names -> the keys :meth:`RemoteHealth.read` reports them under
VLLM_METRICS = {
    "vllm:num_requests_running": "server_running",
    "vllm:num_requests_waiting": "server_waiting",
    "vllm:prefix_cache_queries_total": "prefix_cache_queries",
    "vllm:prefix_cache_hits_total": "prefix_cache_hits",
}
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def parse_metrics(text: str) -> dict[str, float]:
    """The :data:`VLLM_METRICS` in a Prometheus text exposition, each summed over its labels
    (one server may serve several engines); names it lacks are left out."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m is None or m.group(1) not in VLLM_METRICS:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        key = VLLM_METRICS[m.group(1)]
        found[key] = found.get(key, 0.0) + value
    return found


def server_root(base_url: str) -> str:
    """``http://host:port/v1`` -> ``http://host:port`` (where vLLM serves ``/metrics``)."""
    url = urllib.parse.urlsplit(base_url)
    path = url.path.rstrip("/")
    path = path[: -len("/v1")] if path.endswith("/v1") else path
    return urllib.parse.urlunsplit((url.scheme, url.netloc, path, "", ""))


class RemoteHealth:
    """Counters kept by the backend's requests (thread-safe) and a probe of the server, run by
    :meth:`read` at most every ``probe_every_s``."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        probe_timeout_s: float = 2.0,
        probe_every_s: float = 5.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.probe_timeout_s = probe_timeout_s
        self.probe_every_s = probe_every_s
        self._lock = threading.Lock()
        self.in_flight = self.requests = self.retries = self.failures = 0
        self.prompt_tokens = self.cached_prompt_tokens = 0
        self.cached_reported = False  # a reply carried prompt_tokens_details.cached_tokens
        self.last_error: str | None = None
        self._probed_at: float | None = None
        self._probe: dict[str, Any] = {}

    # -- the backend's requests ----------------------------------------------------------

    @contextlib.contextmanager
    def request(self) -> Iterator[None]:
        """Counts one request (with its retries) as in flight while it runs."""
        with self._lock:
            self.in_flight += 1
            self.requests += 1
        try:
            yield
        finally:
            with self._lock:
                self.in_flight -= 1

    def retried(self) -> None:
        with self._lock:
            self.retries += 1

    def failed(self, why: str) -> None:
        with self._lock:
            self.failures += 1
            self.last_error = why

    def succeeded(self) -> None:
        with self._lock:
            self.last_error = None

    def add_usage(self, usage: dict[str, Any]) -> None:
        """A reply's ``usage``: its prompt tokens, and the cached ones when it says."""
        details = usage.get("prompt_tokens_details")
        with self._lock:
            self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            if isinstance(details, dict) and details.get("cached_tokens") is not None:
                self.cached_reported = True
                self.cached_prompt_tokens += int(details.get("cached_tokens") or 0)

    # -- the server ----------------------------------------------------------------------

    def read(self, now: float | None = None) -> dict[str, Any]:
        """The counters and the latest probe (probing first when it is older than
        ``probe_every_s``): ``reachable``, and vLLM's figures where ``/metrics`` has them."""
        now = time.monotonic() if now is None else now
        if self._probed_at is None or now - self._probed_at >= self.probe_every_s:
            self._probe = self.probe()
            self._probed_at = now
        with self._lock:
            info: dict[str, Any] = {
                "base_url": self.base_url,
                "in_flight": self.in_flight,
                "requests": self.requests,
                "retries": self.retries,
                "failures": self.failures,
                "last_error": self.last_error,
                "prompt_tokens": self.prompt_tokens,
                "cached_prompt_tokens": self.cached_prompt_tokens if self.cached_reported else None,
            }
        return {**info, **self._probe}

    def probe(self) -> dict[str, Any]:
        """``GET {base}/models`` (reachable or not) and ``GET {root}/metrics`` (vLLM's)."""
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        found: dict[str, Any] = {"reachable": False}
        try:
            req = urllib.request.Request(f"{self.base_url}/models", headers=headers)
            with urllib.request.urlopen(req, timeout=self.probe_timeout_s) as resp:
                resp.read()
            found["reachable"] = True
        except (urllib.error.URLError, TimeoutError, OSError, ValueError) as e:
            found["probe_error"] = str(getattr(e, "reason", None) or e)[:200]
            return found
        try:
            req = urllib.request.Request(f"{server_root(self.base_url)}/metrics", headers=headers)
            with urllib.request.urlopen(req, timeout=self.probe_timeout_s) as resp:
                text = resp.read(4 * 2**20).decode("utf-8", "replace")
        except (urllib.error.URLError, TimeoutError, OSError, ValueError):
            return found  # no metrics there: nothing more to say
        for key, value in parse_metrics(text).items():
            found[key] = int(value)
        return found
