"""``webshepherd eval trajectories`` from files and from recorded sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from webshepherd.daemon.cli import main
from webshepherd.daemon.recorder.store import Recorder
from webshepherd.daemon.records.actions import ActionRecord
from webshepherd.daemon.records.sessions import SessionEndedRecord, SessionStartedRecord
from webshepherd.protocol.common import AgentInfo
from webshepherd.protocol.replies import ActionEvent, SessionEnded, SessionStarted

from tests.fixtures.data import WEBARENA_TASKS

GOLD = [
    ("3", 1, "Click Reports"),
    ("3", 2, "Click Bestsellers"),
    ("t1", 1, "Click Products link"),
    ("t1", 2, "Click Electronics category"),
    ("t1", 3, "Click Smartphones filter"),
]


def _xlsx(path: Path) -> None:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["Task ID", "Step Number", "Text"])
    for row in GOLD:
        ws.append([int(row[0]) if row[0].isdigit() else row[0], row[1], row[2]])
    wb.save(path)


def test_cli_on_files(tmp_path, capsys):
    gold = tmp_path / "gold.xlsx"
    _xlsx(gold)
    agent = tmp_path / "agent.jsonl"
    rows = [
        {"task_id": "t1", "step": i + 1, "planned": p, "executed": a}
        for i, (p, a) in enumerate(
            [
                ("Click About Us link", "Click About Us link"),
                ("Click Products link", "Click Products link"),
                ("Click Electronics category", "Click Electronics category"),
                ("Scroll down page", "Scroll down page"),
                ("Click Smartphones filter", "Click Smartphones filter"),
                ("Click Smartphones filter", "Click Back"),
            ]
        )
    ]
    rows[-1]["success"] = True
    agent.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "report.json"
    rc = main(
        [
            "eval",
            "trajectories",
            "--gold",
            str(gold),
            "--agent",
            str(agent),
            "--repetition-on",
            "planned",
            "--json",
            str(out),
        ]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    assert "step_success_rate" in printed and "repetitiveness_rate" in printed
    report = json.loads(out.read_text())
    agg = report["aggregate"]
    assert agg["step_success_rate"]["mean"] == 1.0 and agg["recovery_rate"]["mean"] == 1.0
    assert agg["element_accuracy_rate"]["mean"] == pytest.approx(5 / 6)
    assert agg["repetitiveness_rate"]["mean"] == pytest.approx(5 / 6)
    assert agg["success_rate"] == {"mean": 1.0, "std": 0.0, "tasks": 1}
    assert report["options"] == {"lookahead": 3, "recovery_window": 5, "repetition_on": "planned"}


def test_cli_on_recorded_sessions(tmp_path, capsys):
    rec = Recorder(tmp_path / "data" / "webshepherd.sqlite3")
    intent = "What are the top-2 best-selling product in 2022"
    agent = AgentInfo(name="a")
    said = "In summary, the next action I will perform is ```{}```"
    rec.apply_all(
        [
            SessionStartedRecord(
                SessionStarted(session_id="3", intent=intent, agent=agent, source="agent"), 1.0
            ),
            ActionRecord(
                ActionEvent(
                    session_id="3",
                    step=0,
                    action="Click Reports",
                    thought=said.format("Click Reports"),
                ),
                2.0,
            ),
            ActionRecord(
                ActionEvent(
                    session_id="3",
                    step=1,
                    action="Click Bestsellers",
                    thought=said.format("Click Orders"),
                ),
                3.0,
            ),
            SessionEndedRecord(
                SessionEnded(
                    session_id="3", outcome="success", answer="Quest Lumaflex™ Band, and more"
                ),
                4.0,
            ),
        ]
    )
    rec.close()
    gold = tmp_path / "gold.csv"
    gold.write_text("task_id,step,action\n" + "".join(f"{t},{n},{a}\n" for t, n, a in GOLD))
    out = tmp_path / "r.json"
    rc = main(
        [
            "eval",
            "trajectories",
            "--gold",
            str(gold),
            "--agent",
            "3",
            "--data-dir",
            str(tmp_path / "data"),
            "--references",
            str(WEBARENA_TASKS),
            "--json",
            str(out),
        ]
    )
    assert rc == 0
    capsys.readouterr()
    [task] = json.loads(out.read_text())["tasks"]
    assert task["step_success_rate"] == 1.0
    assert task["element_accuracy_rate"] == 0.5  # announced "Click Orders", clicked Bestsellers
    assert task["partial_success_rate"] == 0.5  # one of the two required products
    assert task["success_rate"] == 1.0
    rc = main(
        [
            "eval",
            "trajectories",
            "--gold",
            str(gold),
            "--agent",
            "nope",
            "--data-dir",
            str(tmp_path / "data"),
            "--json",
            str(out),
        ]
    )
    assert rc == 1 and "no recorded session 'nope'" in capsys.readouterr().err


def test_cli_bad_gold_row(tmp_path, capsys):
    gold = tmp_path / "gold.csv"
    gold.write_text("task_id,step,action\n1,1,Click A\n1,two,Click B\n")
    agent = tmp_path / "a.jsonl"
    agent.write_text('{"task_id": "1", "step": 1, "executed": "Click A"}\n')
    rc = main(
        [
            "eval",
            "trajectories",
            "--gold",
            str(gold),
            "--agent",
            str(agent),
            "--json",
            str(tmp_path / "r.json"),
        ]
    )
    assert rc == 1
    assert "gold.csv row 2 field 'step': expected an integer, got 'two'" in capsys.readouterr().err
