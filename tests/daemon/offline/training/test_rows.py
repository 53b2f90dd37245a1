"""SFT rows: both layouts, read back as the messages the model is served with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from webshepherd.daemon.offline.export.writers import write_jsonl
from webshepherd.daemon.offline.training.rows import example_of, read_rows, sft_row
from webshepherd.protocol.errors import WebShepherdError

MSGS = [{"role": "system", "content": ""}, {"role": "user", "content": "judge this"}]


@pytest.mark.parametrize("layout", ["sharegpt", "alpaca"])
def test_a_row_reads_back_as_its_messages_and_target(layout: str) -> None:
    row = sft_row(layout, MSGS, "answer", {"task_id": "s1", "step_id": 2, "label": "good"})
    ex = example_of(json.loads(json.dumps(row)))
    assert ex.messages == MSGS  # the empty system message is kept, as the template has one
    assert ex.answer == "answer"
    assert ex.task_id == "s1"


def test_files_and_folders(tmp_path: Path) -> None:
    rows = [sft_row("sharegpt", MSGS, f"a{i}", {"task_id": str(i)}) for i in range(3)]
    assert write_jsonl(tmp_path / "d" / "sft.jsonl", rows) == 3
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "d" / "sft.parquet")
    pq.write_table(pa.Table.from_pylist(rows[:1]), tmp_path / "d" / "more.parquet")
    got = [example_of(r).answer for r in read_rows(tmp_path / "d")]
    # more.parquet, then sft.jsonl (its parquet twin is skipped)
    assert got == ["a0", "a0", "a1", "a2"]


def test_bad_rows_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"conversations": []}\nnot json\n', encoding="utf-8")
    with pytest.raises(WebShepherdError, match="needs a human and a gpt turn"):
        example_of(next(read_rows(bad)), "bad.jsonl row 1")
    with pytest.raises(WebShepherdError, match=r"bad\.jsonl:2: not JSON"):
        list(read_rows(bad))
    with pytest.raises(WebShepherdError, match="not an SFT row"):
        example_of({"prompt": "x"})
