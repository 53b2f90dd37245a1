"""``webshepherd train`` on a data dir of recorded sessions: the held-out sessions are drawn by
seed, left out of the rows, and the starting and the trained judge are scored on them; the
settings docs/training.md gives move the tiny judge and its outputs still parse."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from webshepherd.daemon.cli import main
from webshepherd.daemon.offline.evaluation.recorded import pick_steps
from webshepherd.daemon.offline.training.recorded import export_sft, held_out
from webshepherd.protocol.errors import WebShepherdError

#: the shop recording is made by the first test that asks for it, and the tiny judge scores
#: each candidate: a minute or two on 2 idle cores, several on a loaded box
pytestmark = [pytest.mark.model, pytest.mark.timeout(900)]

DOC = Path(__file__).resolve().parents[4] / "docs" / "training.md"


def documented_train() -> list[str]:
    """The flags of the ``webshepherd train … --holdout`` line of docs/training.md."""
    text = re.sub(r"\\\n\s*", " ", DOC.read_text("utf-8"))
    commands = [ln for ln in text.splitlines() if ln.startswith("webshepherd train ")]
    line = next(ln for ln in commands if "--holdout" in ln)
    words = shlex.split(line.split("#")[0])
    return words[words.index("train") + 1 :]


def _flag(words: list[str], name: str) -> str:
    return words[words.index(name) + 1]


def test_held_out_sessions_are_drawn_by_seed_and_never_all() -> None:
    pool = [f"s{i}" for i in range(10)]
    a = held_out(pool, 0.2, [], seed=3)
    assert a == held_out(list(reversed(pool)), 0.2, [], seed=3) and len(a) == 2
    assert any(held_out(pool, 0.2, [], seed=s) != a for s in range(4, 10))
    assert len(held_out(pool[:2], 0.9, [], seed=0)) == 1  # never every session
    assert len(held_out(pool[:3], 0.01, [], seed=0)) == 1  # at least one
    assert held_out(pool, None, ["s4", "s1", "s4"], seed=0) == ["s4", "s1"]
    assert held_out(pool, None, [], seed=0) == []
    for share in (0.0, 1.0, 1.5):
        with pytest.raises(WebShepherdError, match="above 0 and below 1"):
            held_out(pool, share, [], seed=0)
    with pytest.raises(WebShepherdError, match="needs two"):
        held_out(pool[:1], 0.5, [], seed=0)


def test_the_export_leaves_the_held_out_sessions_out(shop_recording: Path, tmp_path: Path) -> None:
    every = tmp_path / "all.jsonl"
    n = export_sft(shop_recording, every, quiet=True)
    rows = [json.loads(line) for line in every.read_text("utf-8").splitlines()]
    tasks = sorted({r["task_id"] for r in rows})
    assert len(rows) == n and len(tasks) == 2
    some = tmp_path / "some.jsonl"
    m = export_sft(shop_recording, some, quiet=True, exclude=[tasks[0]])
    kept = [json.loads(line)["task_id"] for line in some.read_text("utf-8").splitlines()]
    left = sum(r["task_id"] == tasks[0] for r in rows)
    assert set(kept) == {tasks[1]} and m == len(kept) == n - left


def test_the_documented_settings_move_the_tiny_judge_on_held_out_sessions(
    shop_recording: Path,
    tiny_model_path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/training.md's own flags, on a small recording with one session held out: the
    trained judge's rewards move from the starting judge's, and its outputs parse no worse
    (no warning)."""
    flags = documented_train()
    out = tmp_path / "judge"
    args = ["train", "--base", str(tiny_model_path), "--data", str(shop_recording),
            "--out", str(out), "--steps", _flag(flags, "--steps"), "--lr", _flag(flags, "--lr"),
            "--batch-size", _flag(flags, "--batch-size"), "--holdout",
            _flag(flags, "--holdout"), "--seed", "0", "--device", "cpu", "--quiet"]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr()
    card = json.loads((out / "webshepherd-train.json").read_text("utf-8"))
    (gone,) = card["held_out"]["sessions"]
    picks = pick_steps(shop_recording)
    assert gone in picks.sessions() and card["held_out"]["rows_left_out"] == 0  # no row files
    kept = export_sft(shop_recording, tmp_path / "kept.jsonl", quiet=True, exclude=[gone])
    assert card["examples"] == kept < export_sft(shop_recording, tmp_path / "all.jsonl", quiet=True)

    scores = card["held_out_scores"]
    assert scores["sessions"] == [gone] and scores["steps"] == len(picks.only([gone]).steps)
    start, trained = scores["judges"]
    assert start["judge"] == f"starting: {tiny_model_path}"
    assert trained["judge"] == f"trained: {out}"
    assert f"held out: {gone}" in printed.out
    assert next(ln for ln in printed.out.splitlines() if ln.startswith("pick accuracy:"))
    # moved: held-out rewards changed (greedy: the starting judge scores the same every
    # time, so any change is the training's; on rows the tiny judge already gets right, as
    # the shop's are, it moves little: docs/training.md gives the figures)
    deltas = [
        abs(a - b)
        for r in scores["rows"]
        for a, b in zip(
            r["judges"][start["judge"]]["rewards"],
            r["judges"][trained["judge"]]["rewards"],
            strict=True,
        )
        if a is not None and b is not None
    ]
    assert deltas and max(deltas) > 1e-6, deltas
    # and still parse: no more unparsed outputs than the starting judge, no warning
    assert trained["unparsed"] <= start["unparsed"] and scores["warning"] is None
    assert "warning" not in printed.err


def test_holdout_needs_a_recording_and_known_sessions(
    shop_recording: Path, tiny_model_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = tmp_path / "rows.jsonl"
    export_sft(shop_recording, rows, quiet=True)
    base = ["train", "--base", str(tiny_model_path), "--out", str(tmp_path / "x"), "--steps", "1"]
    for extra, said in (
        (["--data", str(rows), "--holdout", "0.5"], "name a data dir of recorded sessions"),
        (["--data", str(shop_recording), "--holdout-sessions", "nope"],
         "--holdout-sessions: no recorded session nope"),
        (["--data", str(shop_recording), "--holdout", "1"], "above 0 and below 1"),
    ):  # fmt: skip
        assert main([*base, *extra]) == 1
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err, err
    assert not (tmp_path / "x").exists()  # refused before any training
