"""``TransformersBackend.judge_many`` on the tiny real model: several sessions' batches in one
decode give what each gives alone; one batch's cancel or failure is its own. Also the
repeated-cache layout (``split_attention=False``) against the split one."""

from __future__ import annotations

import threading

import pytest
from webshepherd.daemon.engine.backends.base import JudgeBatch, JudgeOutput
from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend
from webshepherd.daemon.engine.engine import Engine
from webshepherd.daemon.engine.prompts import split_judge_prompt
from webshepherd.protocol.common import Turn

from tests.daemon.engine.backends.test_transformers_backend import _batch

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def backend(tiny_engine: Engine) -> TransformersBackend:
    assert isinstance(tiny_engine.backend, TransformersBackend)
    assert tiny_engine.backend.split_attention
    return tiny_engine.backend


def other_batch(backend: TransformersBackend, samples: int = 1, max_new: int = 16) -> JudgeBatch:
    """A second session's step: another page, a longer tree, two candidates."""
    tree = "\n".join(f"\t[{i}] link 'Result {i}'" for i in range(40))
    prefix, suffixes = split_judge_prompt(
        backend.render_chat,
        intent="Find the opening hours",
        trajectory="",
        current_url="http://city.example.com/library",
        text_observation="RootWebArea 'Library'\n" + tree,
        checklist="Checklist 1: Open the library page",
        candidates=[
            Turn("Open the first result.", "click('0')"),
            Turn("Scroll down to find the hours of the library.", "scroll(0, 500)"),
        ],
    )
    return JudgeBatch(prefix=prefix, suffixes=suffixes, samples=samples, max_new_tokens=max_new)


def same(a: JudgeOutput, b: JudgeOutput, *, counts: bool = True) -> None:
    """Greedy outputs equal token for token, label masses to float tolerance."""
    assert len(a.generations) == len(b.generations)
    for ga, gb in zip(a.generations, b.generations, strict=True):
        for sa, sb in zip(ga, gb, strict=True):
            assert [t.piece for t in sa.tokens] == [t.piece for t in sb.tokens]
            assert sa.finish_reason == sb.finish_reason
            for ta, tb in zip(sa.tokens, sb.tokens, strict=True):
                assert ta.mass == pytest.approx(tb.mass, abs=1e-5)
    if counts:
        assert (a.prefilled_tokens, a.generated_tokens, a.prefix_shared) == (
            b.prefilled_tokens,
            b.generated_tokens,
            b.prefix_shared,
        )


def whole(batch: JudgeBatch) -> JudgeBatch:
    """The same prompts with nothing marked as shared (each prefilled whole)."""
    return JudgeBatch(
        prefix="",
        suffixes=[batch.prefix + s for s in batch.suffixes],
        samples=batch.samples,
        max_new_tokens=batch.max_new_tokens,
    )


def test_merged_batches_equal_each_batch_alone(backend: TransformersBackend) -> None:
    b0, b1 = _batch(backend, max_new=24), other_batch(backend, max_new=12)
    batches = [b0, b1, whole(b1)]  # the third: another session whose prompts are not shared
    alone = [backend.judge(b) for b in batches]
    merged = backend.judge_many(batches, [None] * 3, [None] * 3)
    assert all(isinstance(o, JudgeOutput) for o in merged)
    for m, a in zip(merged, alone, strict=True):
        assert isinstance(m, JudgeOutput)
        same(m, a)
    assert merged[0].prefix_shared and merged[1].prefix_shared and not merged[2].prefix_shared
    same(alone[2], alone[1], counts=False)  # sharing or not: the same tokens
    assert max(len(g[0].tokens) for g in alone[1].generations) <= 12  # its own max_new_tokens
    # no shared prefix at all: the batches still decode together, with the same results
    plain = TransformersBackend(backend.model, backend.tokenizer, "plain", share_prefix=False)
    for m, a in zip(plain.judge_many([b0, b1], [None] * 2, [None] * 2), alone, strict=False):
        assert isinstance(m, JudgeOutput) and not m.prefix_shared
        same(m, a, counts=False)


def test_samples_deltas_cancel_and_failure_stay_per_batch(backend: TransformersBackend) -> None:
    a, b = _batch(backend, samples=3, max_new=16), other_batch(backend, samples=2, max_new=16)
    broken = JudgeBatch(prefix=None, suffixes=["x"], samples=1, max_new_tokens=4)  # type: ignore[arg-type]
    seen: dict[tuple[str, int, int], str] = {}
    cancel_b = threading.Event()

    def sink(name: str):
        def on_delta(c: int, s: int, text: str) -> None:
            seen[(name, c, s)] = seen.get((name, c, s), "") + text
            if name == "b":
                cancel_b.set()  # b's own progress cancels b

        return on_delta

    out = backend.judge_many([a, broken, b], [sink("a"), None, sink("b")], [None, None, cancel_b])
    oa, err, ob = out
    assert isinstance(err, Exception) and not isinstance(err, JudgeOutput)
    assert isinstance(oa, JudgeOutput) and isinstance(ob, JudgeOutput)
    assert [len(g) for g in oa.generations] == [3, 3, 3]
    assert [len(g) for g in ob.generations] == [2, 2]
    assert all(s.finish_reason != "aborted" for g in oa.generations for s in g)
    # b stopped after its first streamed token (a sample may end on its own first)
    assert all(s.finish_reason in ("aborted", "stop") for g in ob.generations for s in g)
    assert any(s.finish_reason == "aborted" for g in ob.generations for s in g)
    assert all(len(s.tokens) < 16 for g in ob.generations for s in g)
    for k, gens in enumerate(oa.generations):
        for i, g in enumerate(gens):
            assert seen[("a", k, i)] == g.text  # deltas add up to each sample's text


def test_repeated_cache_layout_gives_the_same_results(backend: TransformersBackend) -> None:
    copies = TransformersBackend(backend.model, backend.tokenizer, "copies", split_attention=False)
    assert not copies.split_attention
    for batch in (_batch(backend, max_new=24), other_batch(backend)):
        same(copies.judge(batch), backend.judge(batch))
    # without split attention, judge_many judges one batch after the other
    outs = copies.judge_many([_batch(backend), other_batch(backend)], [None, None], [None, None])
    assert all(isinstance(o, JudgeOutput) for o in outs)


def test_an_eager_attention_model_gets_split_attention_too(
    backend: TransformersBackend, tiny_model_path
) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_path), attn_implementation="eager")
    eager = TransformersBackend(model, backend.tokenizer, "eager")
    assert eager.split_attention
    assert model.config._attn_implementation == "webshepherd_split_eager"
    batch = other_batch(eager, max_new=12)
    same(eager.judge(batch), backend.judge(batch))


def test_a_sliding_window_model_keeps_its_own_attention(
    backend: TransformersBackend, tiny_model_path
) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        str(tiny_model_path), use_sliding_window=True, sliding_window=4096, max_window_layers=0
    )
    windowed = TransformersBackend(model, backend.tokenizer, "windowed")
    assert not windowed.split_attention
    assert model.config._attn_implementation == "sdpa"
    out = windowed.judge(other_batch(windowed, max_new=8))  # the repeated-cache layout
    assert out.prefix_shared and out.generated_tokens > 0
