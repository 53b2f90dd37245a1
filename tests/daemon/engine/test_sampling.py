"""The checkpoint's sampling settings: what generation_config.json sets, nothing more."""

from __future__ import annotations

import json
from pathlib import Path

from webshepherd.daemon.engine.sampling import NO_SAMPLING, read_sampling, sampling_from_json


def test_what_the_file_sets_applies_and_nothing_else(tmp_path: Path) -> None:
    # Qwen3's file: temperature is the request's to set; top_k / top_p apply
    (tmp_path / "generation_config.json").write_text(
        json.dumps({"temperature": 0.6, "top_k": 20, "top_p": 0.95, "do_sample": True})
    )
    s = read_sampling(str(tmp_path))
    assert (s.top_k, s.top_p, s.repetition_penalty) == (20, 0.95, None)
    assert s.request_fields() == {"top_k": 20, "top_p": 0.95}
    assert s.truncates and not s.penalizes and str(tmp_path) in s.source
    # a file without them: no truncation (not transformers' class default of top_k=50)
    plain = sampling_from_json({"eos_token_id": 2, "pad_token_id": 0}, "x")
    assert not plain.truncates and plain.request_fields() == {}
    # top_k 0 / -1 means off; Qwen2.5's repetition penalty applies
    off = sampling_from_json({"top_k": -1, "repetition_penalty": 1.05}, "x")
    assert (
        off.top_k is None and off.penalizes and off.request_fields() == {"repetition_penalty": 1.05}
    )


def test_no_file_or_a_bad_one_is_no_sampling(tmp_path: Path) -> None:
    assert read_sampling(str(tmp_path)) == NO_SAMPLING
    (tmp_path / "generation_config.json").write_text("{not json")
    assert read_sampling(str(tmp_path)) == NO_SAMPLING
    assert read_sampling(str(tmp_path / "missing-folder"), local_files_only=True) == NO_SAMPLING
