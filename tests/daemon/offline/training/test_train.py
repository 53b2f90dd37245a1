"""``webshepherd train``: TRL's SFTTrainer on SFT rows, reproducible on CPU, served as trained."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from safetensors.torch import load_file
from webshepherd.daemon.cli import main
from webshepherd.daemon.demo.episodes import rows
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.variants import training_variant
from webshepherd.daemon.offline.export.writers import write_jsonl
from webshepherd.daemon.offline.training.train import TrainOptions, train
from webshepherd.protocol.errors import WebShepherdError

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def shop_rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rows of one generated shop episode (labelled by the shop)."""
    path = tmp_path_factory.mktemp("rows") / "sft.jsonl"
    with ShopServer() as server:
        write_jsonl(path, list(rows(server, training_variant(9), random.Random(9)))[:24])
    return path


def _weights(folder: Path) -> dict[str, object]:
    return load_file(str(folder / "model.safetensors"))


def test_two_cpu_runs_with_one_seed_give_identical_weights(
    tiny_model_path: Path, shop_rows: Path, tmp_path: Path
) -> None:
    opts = dict(base=str(tiny_model_path), data=(shop_rows,), steps=3, learning_rate=1e-3,
                batch_size=4, seed=7, device="cpu", progress=False)  # fmt: skip
    a = train(TrainOptions(out=tmp_path / "a", **opts))  # type: ignore[arg-type]
    b = train(TrainOptions(out=tmp_path / "b", **opts))  # type: ignore[arg-type]
    wa, wb, base = _weights(a), _weights(b), _weights(tiny_model_path)
    assert wa.keys() == wb.keys()
    assert all(wa[k].equal(wb[k]) for k in wa)  # type: ignore[attr-defined]
    assert any(not wa[k].equal(base[k]) for k in wa)  # type: ignore[attr-defined]
    card = json.loads((a / "webshepherd-train.json").read_text("utf-8"))
    assert card["steps"] == 3 and card["examples"] == 24
    assert card["data"][0]["rows"] == 24 and len(card["data"][0]["sha256"]) == 64
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json", "README.md"):
        assert (a / name).is_file(), name
    assert not list(tmp_path.glob(".*"))  # the work folders are gone


def test_the_cli_trains_with_lora_and_the_result_is_served(
    tiny_model_path: Path, shop_rows: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "judge"
    code = main(["train", "--base", str(tiny_model_path), "--data", str(shop_rows), "--out",
                 str(out), "--steps", "2", "--lora", "4", "--lr", "1e-3", "--quiet"])  # fmt: skip
    assert code == 0
    assert f"webshepherd serve --model {out}" in capsys.readouterr().out
    assert not list(out.glob("adapter_*"))  # merged: plain weights
    from webshepherd.daemon.engine.engine import EngineConfig
    from webshepherd.daemon.engine.loader import load_engine

    engine = load_engine(str(out), device="cpu", config=EngineConfig(max_new_tokens=8))
    try:
        parsed = engine.parse_reference_checklist("Checklist 1: Search")
        assert [it.title for it in parsed.items] == ["Search"]
    finally:
        engine.close()


def test_bad_inputs_are_named(tiny_model_path: Path, tmp_path: Path) -> None:
    with pytest.raises(WebShepherdError, match="no such file"):
        train(TrainOptions(base=str(tiny_model_path), out=tmp_path / "x",
                           data=(tmp_path / "missing.jsonl",)))  # fmt: skip
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(WebShepherdError, match="no training rows"):
        train(TrainOptions(base=str(tiny_model_path), out=tmp_path / "x", data=(empty,)))
    plain = tmp_path / "plain"
    shutil.copytree(tiny_model_path, plain)
    cfg = json.loads((plain / "tokenizer_config.json").read_text("utf-8"))
    cfg.pop("chat_template", None)
    (plain / "tokenizer_config.json").write_text(json.dumps(cfg), "utf-8")
    for f in plain.glob("chat_template*"):
        f.unlink()
    row = tmp_path / "one.jsonl"
    turns = [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]
    row.write_text(json.dumps({"conversations": turns}) + "\n", encoding="utf-8")
    with pytest.raises(WebShepherdError, match="no chat template"):
        train(TrainOptions(base=str(plain), out=tmp_path / "x", data=(row,)))
