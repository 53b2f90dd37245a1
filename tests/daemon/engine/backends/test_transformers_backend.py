"""The transformers backend on the tiny real model: prefix sharing is exact, padding is right."""

from __future__ import annotations

import threading

import pytest
from webshepherd.daemon.engine.backends.base import JudgeBatch, JudgeOutput
from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend
from webshepherd.daemon.engine.engine import Engine
from webshepherd.daemon.engine.prompts import judge_messages, split_judge_prompt
from webshepherd.protocol.common import Turn

pytestmark = pytest.mark.model

CANDIDATES = [
    Turn("I should search for red shoes first.", "fill('34', 'red shoes')"),
    Turn("Scroll.", "scroll(0, 300)"),
    Turn(
        "The results are shown, I will open the first one with the best price today.",
        "click('120')",
    ),
]
TREE = "RootWebArea 'Shop', focused\n\t[34] textbox 'Search'\n\t[35] button 'Search'"


def _batch(backend: TransformersBackend, samples: int = 1, max_new: int = 24) -> JudgeBatch:
    prefix, suffixes = split_judge_prompt(
        backend.render_chat,
        intent="Buy red shoes",
        trajectory="",
        current_url="http://shop.example.com",
        text_observation=TREE,
        checklist="Checklist 1: Search\nChecklist 2: Buy",
        candidates=CANDIDATES,
    )
    return JudgeBatch(prefix=prefix, suffixes=suffixes, samples=samples, max_new_tokens=max_new)


def _alone(backend: TransformersBackend, batch: JudgeBatch) -> list[JudgeOutput]:
    """Each candidate of ``batch`` judged alone (its whole prompt, nothing shared)."""
    return [
        backend.judge(
            JudgeBatch(
                prefix="",
                suffixes=[batch.prefix + s],
                samples=1,
                max_new_tokens=batch.max_new_tokens,
                image=batch.image,
            )
        )
        for s in batch.suffixes
    ]


def _assert_same(together: JudgeOutput, alone: list[JudgeOutput]) -> None:
    for k, single in enumerate(alone):
        a, b = together.generations[k][0], single.generations[0][0]
        assert [t.piece for t in a.tokens] == [t.piece for t in b.tokens]
        for ta, tb in zip(a.tokens, b.tokens, strict=True):
            assert ta.mass == pytest.approx(tb.mass, abs=1e-5)
            assert ta.group == tb.group


@pytest.fixture(scope="module")
def backend(tiny_engine: Engine) -> TransformersBackend:
    assert isinstance(tiny_engine.backend, TransformersBackend)
    return tiny_engine.backend


def test_shared_prefix_matches_each_candidate_alone(backend: TransformersBackend) -> None:
    batch = _batch(backend)
    rendered = [
        backend.render_chat(
            judge_messages(
                "Buy red shoes",
                "",
                "http://shop.example.com",
                TREE,
                "Checklist 1: Search\nChecklist 2: Buy",
                c.thought,
                c.action,
            )
        )
        for c in CANDIDATES
    ]
    assert [batch.prefix + s for s in batch.suffixes] == rendered
    together = backend.judge(batch)
    assert together.prefix_shared
    lens = [backend.count_tokens(batch.prefix + s) for s in batch.suffixes]
    assert len(set(lens)) == 3  # really different suffix lengths: padding is exercised
    prefix_len = backend.count_tokens(batch.prefix)
    # the prefix (less at most boundary_slack tokens) is prefilled once instead of three times
    shared_max, shared_min = prefix_len, prefix_len - backend.boundary_slack
    assert sum(lens) - 2 * shared_max <= together.prefilled_tokens <= sum(lens) - 2 * shared_min
    alone = _alone(backend, batch)
    assert not any(a.prefix_shared for a in alone)
    _assert_same(together, alone)
    assert together.generated_tokens == sum(len(g[0].tokens) for g in together.generations) > 0


def test_fallback_without_sharing_gives_the_same_results(backend: TransformersBackend) -> None:
    batch = _batch(backend)
    backend.boundary_slack = 0  # the "THOUGHT: " boundary re-tokenizes: the check must fail
    try:
        out = backend.judge(batch)
    finally:
        backend.boundary_slack = 1
    assert not out.prefix_shared
    assert out.prefilled_tokens == sum(
        backend.count_tokens(batch.prefix + s) for s in batch.suffixes
    )
    _assert_same(out, _alone(backend, batch))


def test_samples_deltas_and_cancel(backend: TransformersBackend) -> None:
    batch = _batch(backend, samples=3, max_new=16)
    seen: dict[tuple[int, int], str] = {}

    def on_delta(c: int, s: int, text: str) -> None:
        seen[(c, s)] = seen.get((c, s), "") + text

    out = backend.judge(batch, on_delta=on_delta)
    assert [len(g) for g in out.generations] == [3, 3, 3]
    for c, gens in enumerate(out.generations):
        for s, g in enumerate(gens):
            assert seen.get((c, s), "") == g.text
            assert g.finish_reason in ("stop", "length")
            assert all(0.0 <= m <= 1.0 + 1e-5 for t in g.tokens for m in (*t.mass, sum(t.mass)))
    cancel = threading.Event()
    cancel.set()
    aborted = backend.judge(batch, cancel=cancel)
    assert {g.finish_reason for gens in aborted.generations for g in gens} == {"aborted"}
