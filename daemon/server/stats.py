"""The ``stats`` event: queue, throughput, step latency, (when CUDA is present) the device, and
(for the openai backends) the remote model server."""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from webshepherd.protocol.replies import (
    DeviceStats,
    JudgeUsage,
    OtlpStats,
    RemoteEngineStats,
    Stats,
)

if TYPE_CHECKING:
    from webshepherd.daemon.engine.types import EngineStats

log = logging.getLogger(__name__)


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def device_stats() -> DeviceStats | None:
    """Memory and utilization of CUDA device 0 when torch sees one (utilization: nvidia-ml-py)."""
    try:
        import torch
    except ImportError:
        return None
    try:
        if not torch.cuda.is_available():
            return None
        free, total = torch.cuda.mem_get_info(0)
        dev = DeviceStats(
            name=torch.cuda.get_device_name(0),
            memory_used_mb=(total - free) / 2**20,
            memory_total_mb=total / 2**20,
        )
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            dev.utilization = float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
        except Exception:
            pass
        return dev
    except Exception as exc:  # a broken driver must not break stats
        log.debug("no device stats: %s", exc)
        return None


def remote_stats(health: dict[str, Any]) -> RemoteEngineStats | None:
    """The ``remote`` part of a backend's ``health()`` (the openai backends'), for ``stats``;
    None for an engine in this process or a health that cannot be read."""
    remote = health.get("remote")
    if not isinstance(remote, dict):
        return None
    try:
        return RemoteEngineStats.model_validate(
            {k: v for k, v in remote.items() if k in RemoteEngineStats.model_fields}
        )
    except ValueError as exc:  # a probe's odd figures must not break stats
        log.debug("no remote stats: %s", exc)
        return None


class StatsCollector:
    """Keeps step latencies and tokens, and turns engine counters into rates.

    ``price_in`` / ``price_out``: USD per million prompt / generated tokens (``None``: no cost).
    """

    def __init__(
        self, window: int = 200, price_in: float | None = None, price_out: float | None = None
    ):
        self.latencies_ms: deque[float] = deque(maxlen=window)
        self.step_tokens: deque[tuple[int, int]] = deque(maxlen=window)
        self.steps = self.prompt_tokens = self.completion_tokens = 0
        self.price_in, self.price_out = price_in, price_out
        self._last_tokens: int | None = None
        self._last_time: float | None = None

    def step_done(
        self, latency_ms: float, prompt_tokens: int = 0, completion_tokens: int = 0
    ) -> None:
        self.latencies_ms.append(latency_ms)
        self.step_tokens.append((prompt_tokens, completion_tokens))
        self.steps += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens

    def judge_usage(self, backend: str, model: str) -> JudgeUsage:
        """Tokens per step and their cost, for ``stats``."""
        recent = list(self.step_tokens)
        cost = None
        if self.price_in is not None or self.price_out is not None:
            cost = (
                self.prompt_tokens * (self.price_in or 0.0)
                + self.completion_tokens * (self.price_out or 0.0)
            ) / 1e6
        return JudgeUsage(
            backend=backend,
            model=model,
            steps=self.steps,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            prompt_tokens_per_step=sum(p for p, _ in recent) / len(recent) if recent else None,
            completion_tokens_per_step=sum(c for _, c in recent) / len(recent) if recent else None,
            cost_usd=cost,
        )

    def tokens_per_s(self, generated_tokens: int, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        rate = 0.0
        if self._last_tokens is not None and self._last_time is not None and now > self._last_time:
            rate = max(0, generated_tokens - self._last_tokens) / (now - self._last_time)
        self._last_tokens, self._last_time = generated_tokens, now
        return rate

    def snapshot(
        self,
        *,
        queue_depth: int,
        in_flight: int,
        engine_stats: EngineStats,
        sessions_active: int,
        connections: int,
        pending_approvals: int,
        device: DeviceStats | None,
        otlp: OtlpStats | None = None,
        judge: tuple[str, str] | None = None,
        remote: RemoteEngineStats | None = None,
    ) -> Stats:
        """``judge``: the engine's ``(backend, model)``, for the ``judge`` figures."""
        generated = int(getattr(engine_stats, "generated_tokens", 0) or 0)
        lat = list(self.latencies_ms)
        return Stats(
            time=time.time(),
            queue_depth=queue_depth,
            in_flight=in_flight,
            tokens_per_s=self.tokens_per_s(generated),
            sessions_active=sessions_active,
            connections=connections,
            pending_approvals=pending_approvals,
            step_latency_ms_p50=percentile(lat, 50),
            step_latency_ms_p95=percentile(lat, 95),
            device=device,
            otlp=otlp,
            judge=self.judge_usage(*judge) if judge is not None else None,
            remote=remote,
        )
