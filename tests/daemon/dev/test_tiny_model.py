"""The tiny model is a real checkpoint, loaded back with from_pretrained, label tokens whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from webshepherd.daemon.dev.tiny_model import (
    MARKER,
    SHIPPED,
    default_tiny_model_path,
    is_complete,
    recipe_digest,
    training_rows,
)
from webshepherd.daemon.engine.labels import LABEL_VARIANTS, label_token_ids

pytestmark = pytest.mark.model


def test_loads_back_through_from_pretrained(tiny_model_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    assert is_complete(tiny_model_path)
    meta = json.loads((tiny_model_path / MARKER).read_text())
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path)
    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    assert model.config.model_type == "qwen2"
    assert 50_000 < meta["parameters"] == sum(p.numel() for p in model.parameters()) < 1_000_000
    rendered = tok.apply_chat_template(
        [{"role": "system", "content": ""}, {"role": "user", "content": "hi"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert (
        rendered
        == "<|im_start|>system\n<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
    assert tok.convert_ids_to_tokens(tok.eos_token_id) == "<|im_end|>"


def test_label_tokens_are_whole_vocabulary_entries(tiny_model_path: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    ids = label_token_ids(tok)
    vocab = tok.get_vocab()
    for tid, group in ids.items():
        assert tok.convert_ids_to_tokens(tid) in LABEL_VARIANTS[group]
    for word in ("ĠYes", "ĠNo", "ĠIn", "ĠNot", "ĠDone", "ĊYes", "Pending"):
        assert vocab[word] in ids
    # entries that merely contain a label word are not labels
    every = {v for vs in LABEL_VARIANTS.values() for v in vs}
    containing = [
        w for w in vocab if w not in every and w.lstrip("ĠĊ").startswith(("In", "No", "Un"))
    ]
    assert containing and not any(vocab[w] in ids for w in containing)
    assert tok.tokenize(" Incomplete")[0] == "ĠIn" and tok.tokenize(" Yes") == ["ĠYes"]


def test_incomplete_folder_is_not_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEBSHEPHERD_TINY_MODEL", str(tmp_path / "m"))
    assert default_tiny_model_path() == tmp_path / "m"
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    assert not is_complete(tmp_path / "m")
    (tmp_path / "m" / MARKER).write_text(json.dumps({"version": 0, "complete": True}))
    assert not is_complete(tmp_path / "m")


def test_the_default_is_the_shipped_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WEBSHEPHERD_TINY_MODEL", raising=False)
    assert is_complete(SHIPPED) and default_tiny_model_path() == SHIPPED


def test_the_shipped_judge_is_what_the_recipe_builds() -> None:
    """Its marker's digest is the current recipe's: rows, seed, steps and settings. A change to
    the shop, the prompts or the settings fails here until the judge is rebuilt and shipped."""
    meta = json.loads((SHIPPED / MARKER).read_text())
    rows = training_rows(meta["seed"])
    assert meta["recipe"] == recipe_digest(rows, meta["seed"], meta["steps"]), (
        "the tiny judge's recipe changed: run `make tiny-judge-rebuild` and commit "
        "daemon/dev/tiny_judge/"
    )
