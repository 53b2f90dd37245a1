"""TRL, LLaMA-Factory and Online-Mind2Web exports of sessions recorded through a real daemon,
each loaded by its consumer: ``datasets`` for all, TRL's dataset utilities for the TRL ones
(chat template of the tiny model's tokenizer), the Online-Mind2Web judges' file reading."""

from __future__ import annotations

import asyncio
import json
import re

from webshepherd.daemon.cli import main

from tests.daemon.offline.export.test_export_e2e import EMAIL, SECRET, record
from tests.fixtures.report_session import record_report_session, shop_pages, snapshots


def _export(capsys, data_dir: str, fmt: str, out, *extra: str) -> dict:
    capsys.readouterr()
    rc = main(
        [
            "export",
            "--format",
            fmt,
            "--out",
            str(out),
            "--data-dir",
            data_dir,
            "--redact",
            re.escape(EMAIL),
            *extra,
        ]
    )
    assert rc == 0
    return json.loads(capsys.readouterr().out)


async def test_trl_and_sft_formats_load(daemon, tmp_path, capsys, tiny_model_path):
    sids = await record(daemon)
    data_dir = str(daemon.config.data_dir)
    import datasets
    from transformers import AutoTokenizer
    from trl.data_utils import (
        is_conversational,
        maybe_apply_chat_template,
        maybe_extract_prompt,
        unpair_preference_dataset,
    )

    # trl-prm: stepwise supervision
    prm_dir = tmp_path / "prm"
    info = await asyncio.to_thread(_export, capsys, data_dir, "trl-prm", prm_dir)
    assert info["rows"] > 0
    for path in (prm_dir / "trl-prm.parquet", prm_dir / "trl-prm.jsonl"):
        kind = "parquet" if path.suffix == ".parquet" else "json"
        ds = datasets.load_dataset(kind, data_files=str(path), split="train")
        assert ds.num_rows == info["rows"]
        assert ds.features["completions"].feature.dtype == "string"
        assert ds.features["labels"].feature.dtype == "bool"
        for row in ds:
            assert len(row["completions"]) == len(row["labels"]) >= 1
            assert all(row["labels"][:-1])  # PRM800K-style: only the last step may be False
            assert row["prompt"].startswith("Task: ")
            assert not is_conversational(row)  # TRL reads it as standard (text) data
    rows = list(ds)
    edited = [r for r in rows if r["task_id"] == sids["edited"]]
    # session 1: steps 0 and 1 are trusted and consecutive: one run of two chosen steps
    assert any(r["labels"] == [True, True] for r in edited), edited
    away = sids["edited_away"].replace(EMAIL, "[REDACTED]")  # the edited-away candidate
    assert any(r["labels"] == [False] and away in r["completions"][0] for r in edited), edited
    assert all(r["checklist_source"] == "reference" for r in rows)
    assert all(len(r["sources"]) == len(r["labels"]) for r in rows)
    assert {r["sources"][0] for r in edited} == {"person"}
    # session 3 ended in failure: the action it ended on is wrong, nothing before it known
    (failed,) = [r for r in rows if r["task_id"] == sids["failed"]]
    assert (failed["labels"], failed["sources"]) == ([False], ["outcome"])
    assert failed["completions"][0].endswith("Action: click('6')")
    raw = (prm_dir / "trl-prm.jsonl").read_text()
    assert SECRET not in raw and EMAIL not in raw

    # trl-preference: conversational pairs
    pref = tmp_path / "pref.jsonl"
    info = await asyncio.to_thread(_export, capsys, data_dir, "trl-preference", pref)
    ds = datasets.load_dataset("json", data_files=str(pref), split="train")
    assert ds.num_rows == info["rows"] > 0
    tok = AutoTokenizer.from_pretrained(str(tiny_model_path))
    for row in ds:
        assert is_conversational(row)
        assert maybe_extract_prompt(row)["prompt"] == row["prompt"]
        text = maybe_apply_chat_template(row, tok)
        assert set(text) >= {"prompt", "chosen", "rejected"}
        assert "Accessibility tree:" in text["prompt"] and text["chosen"] != text["rejected"]
    assert set(ds["chosen_source"]) == {"person"} and set(ds["rejected_source"]) == {
        "person",
        "label",
    }
    unpaired = unpair_preference_dataset(ds)
    assert unpaired.num_rows == 2 * ds.num_rows and set(unpaired["label"]) == {True, False}
    assert SECRET not in pref.read_text() and EMAIL not in pref.read_text()

    # sft: the rows plus LLaMA-Factory's dataset_info.json entry naming them
    sft_dir = tmp_path / "sft"
    (sft_dir).mkdir()
    (sft_dir / "dataset_info.json").write_text(json.dumps({"other": {"file_name": "x.json"}}))
    info = await asyncio.to_thread(_export, capsys, data_dir, "sft", sft_dir)
    assert info["llamafactory_dataset"] == "webshepherd_sft"
    entries = json.loads((sft_dir / "dataset_info.json").read_text())
    assert entries["other"] == {"file_name": "x.json"}  # other entries kept
    entry = entries["webshepherd_sft"]
    assert entry["formatting"] == "sharegpt"
    ds = datasets.load_dataset("json", data_files=str(sft_dir / entry["file_name"]), split="train")
    assert ds.num_rows == info["rows"] > 0
    tags = entry["tags"]
    for row in ds:
        turns = row[entry["columns"]["messages"]]
        assert [t[tags["role_tag"]] for t in turns] == [tags["user_tag"], tags["assistant_tag"]]
        assert all(t[tags["content_tag"]] for t in turns)
        assert entry["columns"]["system"] in row
    alpaca = tmp_path / "alpaca"
    await asyncio.to_thread(_export, capsys, data_dir, "sft", alpaca, "--sft-layout", "alpaca")
    entry = json.loads((alpaca / "dataset_info.json").read_text())["webshepherd_sft"]
    ds = datasets.load_dataset("json", data_files=str(alpaca / entry["file_name"]), split="train")
    assert set(entry["columns"].values()) <= set(ds.column_names)


async def test_mind2web_layout_loads(daemon, tmp_path, capsys):
    observations = await snapshots(shop_pages(4))
    agent = await daemon.client()
    approver = await daemon.client(role="extension", name="ext")
    sid = await record_report_session(agent, approver, observations)
    out = tmp_path / "m2w"
    capsys.readouterr()
    rc = await asyncio.to_thread(
        main,
        [
            "export",
            "--format",
            "mind2web",
            "--out",
            str(out),
            "--sessions",
            sid,
            "--data-dir",
            str(daemon.config.data_dir),
        ],
    )
    assert rc == 0
    info = json.loads(capsys.readouterr().out)
    assert info["rows"] == 1 and info["images"] == 4
    folder = out / sid
    result = json.loads((folder / "result.json").read_text())
    assert result["task"] == "Buy the cheapest USB-C cable under $5"
    assert result["final_result_response"] == "$3.99"
    assert len(result["action_history"]) == len(result["thoughts"]) == 4
    from tests.fixtures.report_session import SECRET as TYPED

    assert TYPED not in (folder / "result.json").read_text()  # a password field's value
    # the judges' reading: screenshots sorted by the first number in their names
    names = sorted(
        (p.name for p in (folder / "trajectory").iterdir()),
        key=lambda x: int(re.findall(r"\d+", x)[0]),
    )
    assert names == [f"{i}_screenshot.png" for i in range(4)]
    import datasets

    results = datasets.load_dataset(
        "json", data_files=str(out / "*" / "result.json"), split="train"
    )
    assert results.num_rows == 1 and results[0]["task_id"] == sid
    images = datasets.load_dataset(
        "imagefolder", data_dir=str(folder / "trajectory"), split="train"
    )
    assert images.num_rows == 4 and images[0]["image"].size == (1280, 720)
