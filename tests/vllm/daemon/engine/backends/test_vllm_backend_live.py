"""The vLLM backend on the tiny real model (runs where vLLM imports and a CUDA GPU is visible)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

vllm = pytest.importorskip("vllm")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("vLLM needs a CUDA GPU", allow_module_level=True)

from webshepherd.daemon.engine.backends.base import JudgeBatch, JudgeOutput  # noqa: E402
from webshepherd.daemon.engine.backends.vllm_backend import VLLMBackend  # noqa: E402
from webshepherd.daemon.engine.engine import Engine, EngineConfig  # noqa: E402
from webshepherd.daemon.engine.prompts import split_judge_prompt  # noqa: E402
from webshepherd.daemon.engine.types import StepInput  # noqa: E402
from webshepherd.protocol.common import Turn  # noqa: E402
from webshepherd.protocol.errors import ModelError  # noqa: E402

pytestmark = pytest.mark.model

CANDIDATES = [
    Turn("I should search for red shoes first.", "fill('34', 'red shoes')"),
    Turn("Scroll.", "scroll(0, 300)"),
    Turn("Open the first result with the best price.", "click('120')"),
]
TREE = "\n".join(f"\t[{i}] link 'Product {i}'" for i in range(40))


@pytest.fixture(scope="module")
def backend(tiny_model_path: Path) -> Iterator[VLLMBackend]:
    b = VLLMBackend.load(
        str(tiny_model_path), gpu_memory_utilization=0.2, dtype="bfloat16", enforce_eager=True
    )
    yield b
    b.close()


def batch(b: VLLMBackend, samples: int = 1, max_new: int = 64) -> JudgeBatch:
    prefix, suffixes = split_judge_prompt(
        b.render_chat,
        intent="Buy red shoes",
        trajectory="",
        current_url="http://shop.example.com",
        text_observation=TREE,
        checklist="Checklist 1: Search\nChecklist 2: Buy",
        candidates=CANDIDATES,
    )
    return JudgeBatch(prefix=prefix, suffixes=suffixes, samples=samples, max_new_tokens=max_new)


def test_judge_shape_stop_and_prefix_cache(backend: VLLMBackend) -> None:
    b = batch(backend, samples=3, max_new=200)
    deltas: dict[tuple[int, int], str] = {}

    def on_delta(c: int, s: int, text: str) -> None:
        deltas[(c, s)] = deltas.get((c, s), "") + text

    out = backend.judge(b, on_delta=on_delta)
    assert out.label_source == "top_k"
    assert len(out.generations) == 3 and all(len(row) == 3 for row in out.generations)
    for c, row in enumerate(out.generations):
        for s, g in enumerate(row):
            assert g.finish_reason in ("stop", "length")
            assert deltas.get((c, s), "") == g.text
            assert 0 < len(g.tokens) <= 200
            if "</answer>" in g.text:  # stopped there, the stop string kept
                assert g.text.endswith("</answer>") and g.finish_reason == "stop"
            for t in g.tokens:
                assert all(m >= 0 for m in t.mass) and sum(t.mass) <= 1 + 1e-4
    prompts = [backend.count_tokens(b.prefix + s) for s in b.suffixes]
    assert out.prefix_shared  # the candidates found the prefix in vLLM's cache
    assert out.prefilled_tokens < sum(prompts)
    assert out.generated_tokens == sum(len(g.tokens) for r in out.generations for g in r)


def test_greedy_is_repeatable_and_cancel_aborts(backend: VLLMBackend) -> None:
    b = batch(backend, samples=1, max_new=48)
    first, again = backend.judge(b), backend.judge(b)
    assert [r[0].text for r in first.generations] == [r[0].text for r in again.generations]
    cancel = threading.Event()
    out = backend.judge(
        batch(backend, samples=2, max_new=400), on_delta=lambda *_: cancel.set(), cancel=cancel
    )
    assert "aborted" in [g.finish_reason for r in out.generations for g in r]
    assert backend.judge(b).generations  # the engine is free again


def test_judge_many_shares_the_engine_and_keeps_errors_apart(backend: VLLMBackend) -> None:
    ok = batch(backend, max_new=32)
    too_long = JudgeBatch(ok.prefix, ok.suffixes, samples=1, max_new_tokens=10**6)
    results = backend.judge_many([ok, too_long, ok], [None, None, None], [None, None, None])
    assert isinstance(results[0], JudgeOutput) and isinstance(results[2], JudgeOutput)
    assert isinstance(results[1], ModelError)
    assert [r[0].text for r in results[0].generations] == [
        r[0].text for r in results[2].generations
    ]


def test_engine_scores_through_vllm(backend: VLLMBackend) -> None:
    engine = Engine(backend, EngineConfig(max_new_tokens=96))
    step = StepInput(
        intent="Buy red shoes",
        current_url="http://shop.example.com",
        axtree=TREE,
        checklist=engine.parse_reference_checklist("Checklist 1: Search\nChecklist 2: Buy"),
        history=(),
        candidates=tuple(CANDIDATES[:2]),
        samples=2,
    )
    score = engine.score(step)
    assert len(score.candidates) == 2 and all(c.label_source == "top_k" for c in score.candidates)
    assert engine.make_checklist("Buy red shoes", "http://shop.example.com", TREE).items
    health = backend.health()
    assert health["backend"] == "vllm" and "gpu" in health
