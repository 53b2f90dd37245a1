"""Device and daemon load: GPU (NVML or the daemon's stats) or CPU/RAM, queue, tokens/s, latency."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static
from webshepherd.protocol.replies import RemoteEngineStats, Stats
from webshepherd.tui.device import DeviceReading, GpuReading
from webshepherd.tui.plain import plain


def _mb(used: float | None, total: float | None) -> str:
    if used is None or total is None:
        return "—"
    return f"{used / 1024:.1f} / {total / 1024:.1f} GiB ({100 * used / max(total, 1):.0f}%)"


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.0f}%"


def _ms(v: float | None) -> str:
    return "—" if v is None else f"{v:.0f} ms"


def device_table(local: DeviceReading | None, stats: Stats | None) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 1), expand=True)
    table.add_column(style="bold", no_wrap=True, width=16)
    table.add_column(ratio=1)
    gpus = list(local.gpus) if local else []
    if not gpus and stats is not None and stats.device is not None:
        d = stats.device
        gpus = [GpuReading(d.name, d.memory_used_mb, d.memory_total_mb, d.utilization)]
        where = "(daemon)"
    else:
        where = "(local)"
    for i, g in enumerate(gpus):
        table.add_row(f"GPU {i} {where}", plain(g.name))
        table.add_row("  memory", _mb(g.memory_used_mb, g.memory_total_mb))
        table.add_row("  utilization", _pct(g.utilization))
    if local is not None and not gpus:
        table.add_row("device", Text("no GPU: CPU", style="yellow"))
    if local is not None:
        cpu = f"{_pct(local.cpu_percent)} of {local.cpus or '?'} cores"
        table.add_row("CPU", cpu)
        table.add_row("RAM", _mb(local.ram_used_mb, local.ram_total_mb))
    table.add_row("", "")
    if stats is None:
        table.add_row("daemon", Text("no stats yet", style="dim"))
        return table
    table.add_row("queue depth", str(stats.queue_depth))
    table.add_row("in flight", str(stats.in_flight))
    table.add_row("tokens/s", f"{stats.tokens_per_s:.1f}")
    p50, p95 = _ms(stats.step_latency_ms_p50), _ms(stats.step_latency_ms_p95)
    table.add_row("step latency", f"p50 {p50} · p95 {p95}")
    table.add_row("sessions active", str(stats.sessions_active))
    table.add_row("connections", str(stats.connections))
    table.add_row("approvals", str(stats.pending_approvals))
    if stats.judge is not None:
        j = stats.judge
        table.add_row("", "")
        table.add_row("judge", plain(f"{j.model} ({j.backend})"))
        if j.prompt_tokens_per_step is not None and j.completion_tokens_per_step is not None:
            per_step = f"in {j.prompt_tokens_per_step:.0f} · out {j.completion_tokens_per_step:.0f}"
            table.add_row("tokens/step", per_step)
        table.add_row(
            "tokens", f"in {j.prompt_tokens} · out {j.completion_tokens} · {j.steps} steps"
        )
        cost = "— (serve --price-in/--price-out)" if j.cost_usd is None else f"${j.cost_usd:.4f}"
        table.add_row("cost", cost)
    if stats.remote is not None:
        _remote_rows(table, stats.remote)
    return table


def _remote_rows(table: Table, r: RemoteEngineStats) -> None:
    """The remote model server (``serve --backend openai``): reachable, load, cache hits."""
    table.add_row("", "")
    state = Text("reachable", style="green") if r.reachable else Text("unreachable", style="red")
    table.add_row("model server", Text.assemble(r.base_url, " · ", state))
    load = f"{r.in_flight} from here · {r.retries} retried · {r.failures} failed"
    if r.server_running is not None:
        load += f" · server: {r.server_running} running, {r.server_waiting or 0} waiting"
    table.add_row("  requests", load)
    if r.prefix_cache_queries:
        hits = r.prefix_cache_hits or 0
        share = f"{100 * hits / r.prefix_cache_queries:.0f}%"
        table.add_row("  prefix cache", f"{share} of {r.prefix_cache_queries} tokens (server)")
    elif r.cached_prompt_tokens is not None and r.prompt_tokens:
        share = f"{100 * r.cached_prompt_tokens / r.prompt_tokens:.0f}%"
        table.add_row("  prefix cache", f"{share} of {r.prompt_tokens} prompt tokens (usage)")
    if r.last_error:
        table.add_row("  last error", Text(r.last_error, style="red"))


class DevicePanel(Static):
    """Call :meth:`show` with a local reading and the daemon's latest stats."""

    DEFAULT_CSS = """
    DevicePanel { height: auto; padding: 0 1; }
    """
    can_focus = True

    def show(self, local: DeviceReading | None, stats: Stats | None) -> None:
        self.update(device_table(local, stats))
