"""The ``stats`` event: queue, throughput, step latency and (when CUDA is present) the device."""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

from webshepherd.protocol.common import DeviceStats, OtlpStats
from webshepherd.protocol.replies import Stats

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


class StatsCollector:
    """Keeps step latencies and turns engine counters into rates."""

    def __init__(self, window: int = 200):
        self.latencies_ms: deque[float] = deque(maxlen=window)
        self._last_tokens: int | None = None
        self._last_time: float | None = None

    def step_done(self, latency_ms: float) -> None:
        self.latencies_ms.append(latency_ms)

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
        engine_stats: Any,
        sessions_active: int,
        connections: int,
        pending_approvals: int,
        device: DeviceStats | None,
        otlp: OtlpStats | None = None,
    ) -> Stats:
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
        )
