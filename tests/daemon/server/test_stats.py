"""The ``stats`` figures: the judge's tokens per step and their cost."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from webshepherd.daemon.engine.types import EngineStats
from webshepherd.daemon.server.stats import StatsCollector
from webshepherd.tui.widgets.device_panel import device_table


def _snapshot(collector: StatsCollector):
    return collector.snapshot(
        queue_depth=0,
        in_flight=0,
        engine_stats=EngineStats(),
        sessions_active=1,
        connections=1,
        pending_approvals=0,
        device=None,
        judge=("openai-chat", "gpt-4o-mini"),
    )


def test_tokens_per_step_and_cost_at_the_given_prices() -> None:
    collector = StatsCollector(window=2, price_in=0.15, price_out=0.60)
    for prompt, out in ((1000, 100), (2000, 300), (3000, 500)):
        collector.step_done(50.0, prompt, out)
    judge = _snapshot(collector).judge
    assert judge is not None and (judge.steps, judge.prompt_tokens) == (3, 6000)
    assert (judge.prompt_tokens_per_step, judge.completion_tokens_per_step) == (2500, 400)
    assert judge.cost_usd == pytest.approx((6000 * 0.15 + 900 * 0.60) / 1e6)
    assert StatsCollector().judge_usage("transformers", "m").cost_usd is None


def test_the_device_tab_shows_the_judges_tokens_and_cost() -> None:
    collector = StatsCollector(price_in=1.0, price_out=2.0)
    collector.step_done(80.0, 1200, 80)
    console = Console(width=100, record=True, file=io.StringIO())
    console.print(device_table(None, _snapshot(collector)))
    text = console.export_text()
    assert "gpt-4o-mini (openai-chat)" in text
    assert "in 1200 · out 80" in text and "$0.0014" in text


def test_remote_stats_come_from_the_backends_health_and_show_in_the_device_tab() -> None:
    from webshepherd.daemon.server.stats import remote_stats

    assert remote_stats({"backend": "transformers", "device": "cpu"}) is None
    assert remote_stats({"remote": {"base_url": 7}}) is None  # odd figures: no section
    health = {
        "backend": "openai",
        "remote": {
            "base_url": "http://127.0.0.1:30000/v1",
            "reachable": False,
            "probe_error": "connection refused",  # not on the wire
            "in_flight": 3,
            "requests": 12,
            "retries": 2,
            "failures": 1,
            "last_error": "the model server answered HTTP 502",
            "prompt_tokens": 4000,
            "cached_prompt_tokens": 3000,
            "server_running": 2,
            "server_waiting": 1,
            "prefix_cache_queries": 1000,
            "prefix_cache_hits": 900,
        },
    }
    remote = remote_stats(health)
    assert remote is not None and remote.in_flight == 3 and remote.prefix_cache_hits == 900
    collector = StatsCollector()
    snap = collector.snapshot(
        queue_depth=0,
        in_flight=3,
        engine_stats=EngineStats(),
        sessions_active=4,
        connections=4,
        pending_approvals=0,
        device=None,
        judge=("openai", "tiny"),
        remote=remote,
    )
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(device_table(None, snap))
    text = console.export_text()
    assert "http://127.0.0.1:30000/v1 · unreachable" in text
    assert "3 from here · 2 retried · 1 failed · server: 2 running, 1 waiting" in text
    assert "90% of 1000 tokens (server)" in text and "HTTP 502" in text
