"""The loop as a user runs it: record demo sessions (``--keep``), a person labels a step
through a daemon on that recording (a monitor's connection, as the TUI), ``webshepherd export
--format sft``, ``webshepherd train``, then the trained checkpoint scores the same step and
its rewards differ from the base model's. Everything is greedy with a fixed seed and step
count: the base model scores the step the same twice, so the change is the training's."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from webshepherd.daemon.build import running_daemon
from webshepherd.daemon.cli import main
from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.demo.run import run_demo
from webshepherd.daemon.engine.engine import Engine, EngineConfig
from webshepherd.daemon.engine.loader import load_engine
from webshepherd.daemon.engine.types import StepInput
from webshepherd.daemon.offline.training.recorded import export_sft
from webshepherd.daemon.recorder import History
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.common import Turn

from tests.fixtures.daemon import TEST_TOKEN, make_settings, pairing_code

pytestmark = pytest.mark.model
CONFIG = EngineConfig(max_new_tokens=96, checklist_max_new_tokens=48)


def _first_step(data_dir: Path) -> tuple[StepInput, str, int, list[str]]:
    """The demo session's first scored step as the engine scores it, the session's id, the
    step's number, and the candidates the shop says move nothing (its labels)."""
    from webshepherd.daemon.engine.checklist_parse import parse_reference_checklist

    history = History.open(data_dir / DB_NAME)
    try:
        (summary,) = history.sessions()
        tl = history.timeline(summary.session_id)
    finally:
        history.close()
    assert tl is not None and tl.checklist is not None
    step = next(s for s in tl.steps if s.scoring is not None)
    assert step.scoring is not None
    cands = step.scoring.candidates
    # the demo recorded the shop's labels for every scored candidate of every step
    for s in tl.steps:
        if s.scoring is not None:
            got = {lab.action for lab in s.labels if lab.source == "environment"}
            assert got == {c.candidate.action for c in s.scoring.candidates}
    stuck = [lab.action for lab in step.labels if set(lab.items) == {"no"}]
    inp = StepInput(
        intent=tl.summary.intent,
        current_url=step.url,
        axtree=step.axtree,
        checklist=parse_reference_checklist(tl.checklist.text),
        history=(),
        candidates=tuple(Turn(c.candidate.thought, c.candidate.action) for c in cands),
    )
    return inp, summary.session_id, step.step, stuck


def _rewards(engine: Engine, step: StepInput) -> list[float | None]:
    return [c.reward for c in engine.score(step).candidates]


async def _person_labels(data_dir: Path, base: Path, engine: Engine, sid: str, step: int,
                         action: str) -> None:  # fmt: skip
    """A person says ``action`` moves nothing, from a monitor's connection to a daemon that
    serves the recording (as the TUI would)."""
    settings = make_settings(base, data_dir=data_dir)
    async with (
        running_daemon(settings, engine) as server,
        AsyncClient(server.url, token=TEST_TOKEN, role="monitor", name="tui") as c,
    ):
        await c.pair(pairing_code(settings.daemon.config_dir, "monitor"), "tui")  # as a person does
        await c.label(sid, step, action, ["no"] * 4, source="person", note="goes nowhere")


def test_recorded_truth_trains_a_judge_that_scores_differently(
    tiny_model_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo"
    console = Console(file=io.StringIO(), width=120)
    code = run_demo(model=str(tiny_model_path), samples=1, max_steps=3, keep=True, plot=False,
                    console=console, out=out)  # fmt: skip
    assert code == 0
    data_dir = Path(json.loads((out / "summary.json").read_text("utf-8"))["data_dir"])
    try:
        step, sid, number, stuck = _first_step(data_dir)
        assert stuck, "the shop calls some candidate of the first step useless"
        base = load_engine(str(tiny_model_path), device="cpu", config=CONFIG)
        asyncio.run(_person_labels(data_dir, tmp_path, base, sid, number, stuck[0]))

        rows = tmp_path / "rows.jsonl"
        args = ["export", "--format", "sft", "--data-dir", str(data_dir), "--out", str(rows)]
        capsys.readouterr()  # what ran before
        assert main(args) == 0  # its summary, as JSON on stdout (--quiet prints nothing)
        info = json.loads(capsys.readouterr().out)
        labels = [json.loads(line)["label"] for line in rows.read_text("utf-8").splitlines()]
        assert labels.count("reference") == 1 and labels.count("person") == 1
        assert labels.count("environment") == info["rows"] - 2 > 0
        assert info["skipped_by_reason"] == {}  # every scored candidate has truth
        assert export_sft(data_dir, tmp_path / "direct.jsonl", quiet=True) == info["rows"]

        new = tmp_path / "judge"
        assert main(["train", "--base", str(tiny_model_path), "--data", str(rows), "--out",
                     str(new), "--steps", "4", "--lr", "1e-3", "--batch-size", "4",
                     "--seed", "0", "--device", "cpu", "--quiet"]) == 0  # fmt: skip
        card = json.loads((new / "webshepherd-train.json").read_text("utf-8"))
        assert card["steps"] == 4 and card["examples"] == info["rows"]

        before = _rewards(base, step)
        assert _rewards(base, step) == before  # greedy: the same model scores the same
        base.close()
        trained = load_engine(str(new), device="cpu", config=CONFIG)
        try:
            after = _rewards(trained, step)
        finally:
            trained.close()
        assert len(after) == len(before) and after != before
    finally:
        shutil.rmtree(data_dir.parent, ignore_errors=True)
