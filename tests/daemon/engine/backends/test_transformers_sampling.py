"""The checkpoint's generation_config.json decides the sampling: a copy of the tiny model whose
file sets ``top_k: 1`` samples exactly the greedy judgement, on every decode path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from webshepherd.daemon.engine.backends.base import JudgeBatch
from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend
from webshepherd.daemon.engine.prompts import split_judge_prompt
from webshepherd.protocol.common import Turn

pytestmark = pytest.mark.model

CANDIDATES = [
    Turn("I should search for red shoes first.", "fill('34', 'red shoes')"),
    Turn("Scroll.", "scroll(0, 300)"),
]


def _with_generation_config(src: Path, dst: Path, **settings: object) -> Path:
    shutil.copytree(src, dst)
    path = dst / "generation_config.json"
    data = json.loads(path.read_text("utf-8"))
    path.write_text(json.dumps({**data, **settings}), "utf-8")
    return dst


@pytest.fixture(scope="module")
def top1_path(tiny_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("top1") / "model"
    return _with_generation_config(tiny_model_path, out, top_k=1, temperature=0.6)


def _batch(backend: TransformersBackend, samples: int, greedy: bool | None = None) -> JudgeBatch:
    prefix, suffixes = split_judge_prompt(
        backend.render_chat,
        intent="Buy red shoes",
        trajectory="",
        current_url="http://shop.example.com",
        text_observation="RootWebArea 'Shop'\n\t[34] textbox 'Search'",
        checklist="Checklist 1: Search\nChecklist 2: Buy",
        candidates=CANDIDATES,
    )
    return JudgeBatch(
        prefix=prefix,
        suffixes=suffixes,
        samples=samples,
        max_new_tokens=20,
        temperature=1.5,
        greedy=greedy,
    )


def _texts(backend: TransformersBackend, batch: JudgeBatch) -> list[list[str]]:
    return [[g.text for g in gens] for gens in backend.judge(batch).generations]


@pytest.mark.parametrize("split", [True, False], ids=["split-attention", "repeated-prefix"])
def test_top_k_1_in_the_file_makes_every_sample_the_greedy_one(
    top1_path: Path, split: bool
) -> None:
    backend = TransformersBackend.load(str(top1_path), device="cpu", split_attention=split)
    try:
        assert backend.sampling.top_k == 1 and backend.sampling.top_p is None
        greedy = _texts(backend, _batch(backend, 1))
        sampled = _texts(backend, _batch(backend, 4))
        single = _texts(backend, _batch(backend, 1, greedy=False))  # one sample at T=1.5
        for k, [text] in enumerate(greedy):
            assert sampled[k] == [text] * 4
            assert single[k] == [text]
        # judge_many's merged decode, and a checklist's plain generation
        merged = backend.judge_many(
            [_batch(backend, 3), _batch(backend, 1)], [None] * 2, [None] * 2
        )
        assert [[g.text for g in gens] for gens in merged[0].generations] == [
            [t] * 3 for [t] in greedy
        ]
        prompt = _batch(backend, 1).prefix + _batch(backend, 1).suffixes[0]
        assert backend.generate(prompt, 20, temperature=1.5) == backend.generate(prompt, 20)
    finally:
        backend.close()


def test_the_files_repetition_penalty_changes_greedy_decoding_as_transformers_does(
    tiny_model_path: Path, tmp_path: Path
) -> None:
    """A repetition penalty in the file applies to greedy decoding too: the judgement equals
    what transformers' own ``generate`` writes with that file, token for token."""
    path = _with_generation_config(tiny_model_path, tmp_path / "pen", repetition_penalty=1.8)
    backend = TransformersBackend.load(str(path), device="cpu")
    try:
        assert backend.sampling.repetition_penalty == pytest.approx(1.8)
        batch = _batch(backend, 1)
        ours = backend.judge(batch).generations[0][0]
        import torch

        ids = torch.tensor([backend._encode(batch.prefix + batch.suffixes[0])])
        ref = backend.model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=len(ours.tokens),
            do_sample=False,
            repetition_penalty=1.8,
            eos_token_id=None,
        )[0, ids.shape[1] :].tolist()
        assert [backend._piece(t) for t in ref] == [t.piece for t in ours.tokens]
    finally:
        backend.close()
