"""``webshepherd export``'s truth flags: by default rows come from truth only and a generated
checklist is left out; ``--include-judged`` adds the judge's pairs and ``--generated-checklists``
the judge's checklist, each marked in the rows. A session recorded through a real daemon with
the SDK (tests/daemon/offline/export/test_truth.py's), exported by the CLI into files."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from webshepherd.daemon.cli import main
from webshepherd.protocol.client import AsyncClient

from tests.daemon.offline.export.test_truth import GENERATED, HELP, NEXT, judge, record
from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.scripted_judge import scripted_daemon


def _export(capsys: pytest.CaptureFixture[str], data: Path, fmt: str, out: Path, *flags: str):
    capsys.readouterr()
    argv = ["export", "--format", fmt, "--out", str(out), "--data-dir", str(data), *flags]
    assert main(argv) == 0
    info = json.loads(capsys.readouterr().out)
    return info, [json.loads(x) for x in out.read_text().splitlines()]


async def test_the_truth_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with (
        scripted_daemon(tmp_path, judge()) as server,
        AsyncClient(server.url, TEST_TOKEN) as c,
    ):
        await record(c, "success", checklist=None)  # no labels, no person: the judge's checklist
    data = tmp_path / "data"

    def run(fmt: str, name: str, *flags: str):
        return asyncio.to_thread(_export, capsys, data, fmt, tmp_path / name, *flags)

    info, rows = await run("webprm", "plain.jsonl")
    assert rows == [] and info["skipped_by_reason"] == {"no_rejected": 2}
    info, rows = await run("webprm", "asked.jsonl", "--include-judged", "--generated-checklists")
    assert [(r["rejected"][0]["action"], r["rejected_source"]) for r in rows] == [
        (HELP, ["judge"]),
        (NEXT, ["judge"]),
    ]
    assert {(r["checklist"], r["checklist_source"]) for r in rows} == {(GENERATED, "generated")}
    _, rows = await run("webprm", "judged.jsonl", "--include-judged")
    assert {(r["checklist"], r["checklist_source"]) for r in rows} == {("", None)}

    _, prm = await run("trl-prm", "prm.jsonl")
    assert [(r["sources"], r["checklist_source"]) for r in prm] == [(["outcome"] * 2, None)]
    assert "Checklist:" not in prm[0]["prompt"]
    _, prm = await run("trl-prm", "prm-asked.jsonl", "--include-judged", "--generated-checklists")
    assert [r["sources"] for r in prm] == [["outcome"] * 2, ["judge"], ["outcome", "judge"]]
    assert all(f"Checklist:\n{GENERATED}" in r["prompt"] for r in prm)
    _, pairs = await run("trl-preference", "pref.jsonl", "--include-judged")
    assert {(p["chosen_source"], p["rejected_source"]) for p in pairs} == {("outcome", "judge")}
