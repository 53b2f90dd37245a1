"""``webshepherd eval recorded`` from the command line: judges side by side on a recording
made through a real daemon with the SDK and the shop's labels (the shipped tiny judge and a
copy of it loaded from another folder; a judge a running daemon serves), every figure in the
JSON; bad input named in one line."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from webshepherd.daemon.cli import main
from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.dev.tiny_model import ensure_tiny_model
from webshepherd.daemon.offline.evaluation.recorded import pick_steps

from tests.fixtures.daemon import TEST_TOKEN, StartDaemon, start_session

#: the shop recording is made by the first test that asks for it, and the tiny judge scores
#: each candidate: a minute or two on 2 idle cores, several on a loaded box
pytestmark = [pytest.mark.model, pytest.mark.timeout(900)]


def test_two_models_side_by_side(
    shop_recording: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "copied-judge"
    shutil.copytree(ensure_tiny_model(progress=False), copy)
    report = tmp_path / "picks.json"
    generated = next(s for s, kind in pick_steps(shop_recording).checklists.items()
                     if kind == "generated")  # fmt: skip
    args = ["eval", "recorded", "--data-dir", str(shop_recording), "--session", generated,
            "--model", "tiny", "--model", str(copy), "--max-new-tokens", "96", "--json",
            str(report), "--quiet"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    data = json.loads(report.read_text("utf-8"))
    names = [j["judge"] for j in data["judges"]]
    assert names == ["tiny", str(copy)]
    legend = [line for line in out if line.startswith("judge ") and ": " in line]
    assert legend == [f"judge {i}: {n}" for i, n in enumerate(names, 1)]
    assert data["sessions"] == [generated] and data["checklists"] == {"generated": 1}
    assert "checklist: each session's own (1 generated)" in out[0]
    steps = data["steps"]
    assert steps == len(data["rows"]) > 0
    for j in data["judges"]:
        got = j["pick_accuracy"]
        assert got["steps"] == steps
        assert got["right_first"] == sum(r["judges"][j["judge"]]["rank"] == 1 for r in data["rows"])
        assert j["outputs"] == sum(len(r["candidates"]) for r in data["rows"])
        assert j["unparsed"] == sum(j["unparsed_by_reason"].values())
    # one judge twice (a copied folder): the same figures, side by side in one row
    tiny, copied = data["judges"]
    assert tiny["pick_accuracy"] == copied["pick_accuracy"]
    assert tiny["unparsed"] == copied["unparsed"]
    picks = next(line for line in out if line.startswith("pick accuracy:"))
    x = f"{tiny['pick_accuracy']['right_first']}/{steps}"
    assert picks.split()[2::2] == [x, x]
    for r in data["rows"]:
        assert r["judges"]["tiny"]["rewards"] == r["judges"][str(copy)]["rewards"]


@pytest.mark.asyncio(loop_scope="function")
async def test_a_served_judge_on_one_session(
    shop_recording: Path,
    start_daemon: StartDaemon,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    served = await start_daemon()
    token = tmp_path / "token"
    token.write_text(TEST_TOKEN, encoding="utf-8")
    report = tmp_path / "picks.json"
    one = pick_steps(shop_recording).sessions()[0]
    args = ["eval", "recorded", "--data-dir", str(shop_recording), "--session", one,
            "--url", served.url, "--token-file", str(token), "--json", str(report),
            "--quiet"]  # fmt: skip
    assert await asyncio.to_thread(main, args) == 0
    data = json.loads(report.read_text("utf-8"))
    assert data["sessions"] == [one] and {r["session_id"] for r in data["rows"]} == {one}
    (judge,) = data["judges"]
    assert judge["judge"] == f"served:{served.url}"
    assert judge["pick_accuracy"]["steps"] == data["steps"] > 0
    assert f"judge 1: served:{served.url}" in capsys.readouterr().out


def test_bad_input_is_named_in_one_line(
    shop_recording: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("a shopping list, not a recording\n" * 10, encoding="utf-8")
    for data, extra, said in (
        (notes, [], "not a webshepherd recording"),
        (tmp_path / "nowhere", [], "no recording here"),
        (shop_recording, ["--session", "0123abc"], "--session: no recorded session 0123abc"),
    ):
        args = ["eval", "recorded", "--data-dir", str(data), "--model", "tiny", *extra]
        assert main(args) == 1
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err, err


@pytest.mark.asyncio(loop_scope="function")
async def test_a_recording_without_truth_says_what_to_record(
    start_daemon: StartDaemon, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    daemon = await start_daemon()
    agent = await daemon.client()
    sid = await start_session(agent)
    reply = await agent.request(
        {"type": "score", "session_id": sid, "samples": 1, "approval": "never",
         "candidates": [{"thought": "", "action": "click('2')"},
                        {"thought": "", "action": "scroll(0, 400)"}]},
        timeout=120,
    )  # fmt: skip
    assert reply["type"] == "scored", reply
    data = daemon.config.data_dir
    assert (data / DB_NAME).is_file()
    args = ["eval", "recorded", "--data-dir", str(data), "--model", "tiny"]
    assert await asyncio.to_thread(main, args) == 1
    err = capsys.readouterr().err
    assert "no recorded step has a right candidate" in err and "session.label" in err, err
