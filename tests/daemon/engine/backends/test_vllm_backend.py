"""The vLLM backend's conversions from engine outputs (plain data in, exact numbers out).

These need no vLLM; test_vllm_backend_live.py runs the backend itself where vLLM imports.
"""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import dataclass

import pytest
from webshepherd.daemon.engine.backends.base import IN_PROGRESS, NO, YES
from webshepherd.daemon.engine.backends.vllm_backend import SampleStream, judge_output, plain_top

GROUPS = {10: YES, 11: NO, 12: IN_PROGRESS}
PIECES = {1: "<answer>", 2: "\n", 10: " Yes", 11: " No", 12: " In", 20: "Checklist", 99: ""}


@dataclass(frozen=True)
class Logprob:
    """The two fields vLLM's ``Logprob`` carries that the conversion reads."""

    logprob: float
    rank: int | None


def test_plain_top_keeps_the_top_k_only() -> None:
    entry = {10: Logprob(math.log(0.5), 1), 11: Logprob(math.log(0.25), 2), 12: Logprob(-9.0, 40)}
    assert plain_top(entry, 20) == {10: math.log(0.5), 11: math.log(0.25)}  # rank 40: sampled
    assert plain_top(entry, 1) == {10: math.log(0.5)}
    assert plain_top({3: -1.5, 4: None}, 5) == {3: -1.5}  # bare floats; None dropped
    assert plain_top(None, 5) == {}


def fold(stream: SampleStream, text: str, ids: list[int], tops: list[dict], finish=None) -> str:
    return stream.add(text, ids, tops, finish, piece=PIECES.__getitem__, groups=GROUPS, skip={99})


def test_sample_stream_folds_deltas_into_tokens_and_masses() -> None:
    s = SampleStream()
    top_yes = {10: math.log(0.6), 12: math.log(0.1), 11: math.log(0.2), 20: math.log(0.05)}
    assert fold(s, "<answer>", [1], [{1: -0.01}]) == "<answer>"
    assert fold(s, "\n Yes", [2, 10], [{2: -0.1}, top_yes]) == "\n Yes"
    assert fold(s, "", [99], [{99: -0.2}], finish="stop") == ""
    g = s.generation()
    assert g.text == "<answer>\n Yes" and g.finish_reason == "stop"
    assert [t.piece for t in g.tokens] == ["<answer>", "\n", " Yes"]  # end of sequence skipped
    assert [t.group for t in g.tokens] == [None, None, YES]
    assert g.tokens[2].mass == pytest.approx((0.6, 0.1, 0.2))
    assert g.tokens[0].mass == (0.0, 0.0, 0.0)
    assert s.ids == [1, 2, 10]


def test_sample_stream_without_logprobs_and_finish_reasons() -> None:
    s = SampleStream()
    fold(s, " No", [11], [])
    assert s.tokens[0].group == NO and s.tokens[0].mass == (0.0, 0.0, 0.0)
    assert s.generation().finish_reason == "length"  # unfinished, not aborted
    assert s.generation(aborted=True).finish_reason == "aborted"
    s.finish = "abort"
    assert s.generation().finish_reason == "aborted"
    s.finish = "length"
    assert s.generation(aborted=True).finish_reason == "length"  # done before the cancel


def test_judge_output_counts_what_the_cache_did_not_hold() -> None:
    a, b, c = SampleStream(), SampleStream(), SampleStream()
    fold(a, " Yes", [10], [{}], finish="stop")
    fold(b, " No No", [11, 11], [{}, {}], finish="length")
    out = judge_output([[a], [b], [c]], [100, 120, 90], [64, 64, 80], aborted=True, warm_tokens=70)
    assert out.prefilled_tokens == 70 + 36 + 56 + 10
    assert out.generated_tokens == 3
    assert out.prefix_shared and out.label_source == "top_k"
    assert [g[0].finish_reason for g in out.generations] == ["stop", "length", "aborted"]
    cold = judge_output([[a]], [100], [0])
    assert cold.prefilled_tokens == 100 and not cold.prefix_shared


def test_importing_the_backend_and_the_loader_imports_no_vllm() -> None:
    code = (
        "import sys, webshepherd.daemon.engine.backends.vllm_backend; "
        "import webshepherd.daemon.engine.loader; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('vllm', 'torch')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
