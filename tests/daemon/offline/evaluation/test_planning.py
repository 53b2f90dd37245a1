"""The planning-framework metrics against the paper's Table 1 and hand-computed edge cases."""

from __future__ import annotations

import json

import pytest
from webshepherd.daemon.offline.evaluation.matchers import ExactMatcher
from webshepherd.daemon.offline.evaluation.planning import (
    AgentStep,
    AgentTrajectory,
    Options,
    aggregate,
    element_accuracy,
    match_gold_steps,
    partial_success,
    recovery,
    repetitiveness,
    step_success,
    task_metrics,
)
from webshepherd.daemon.offline.evaluation.trajectories import (
    evaluate,
    load_references,
    read_agent,
    read_gold,
)
from webshepherd.daemon.sessions.plans import normalize, planned_from_thought

from tests.fixtures.data import WEBARENA_TASKS

M = ExactMatcher()
HUMAN = ["Click Products link", "Click Electronics category", "Click Smartphones filter"]
PLANNED = [
    "Click About Us link",
    "Click Products link",
    "Click Electronics category",
    "Scroll down page",
    "Click Smartphones filter",
    "Click Smartphones filter",
]
ACTUAL = [*PLANNED[:5], "Click Back"]
TABLE1 = AgentTrajectory(
    "t1", [AgentStep(executed=a, planned=p) for a, p in zip(ACTUAL, PLANNED, strict=True)]
)


def test_table1_step_success_recovery_element_accuracy():
    assert match_gold_steps(HUMAN, ACTUAL, M) == [1, 2, 4]  # A2, A3, A5
    assert step_success(HUMAN, ACTUAL, M) == 1.0
    rec = recovery(HUMAN, ACTUAL, M)
    assert (rec.deviations, rec.recoveries) == (2, 2)
    assert rec.incidents == [(0, 1), (3, 4)]  # About Us → Products; scroll → Smartphones
    assert rec.rate == 1.0
    assert element_accuracy(TABLE1.steps, M) == pytest.approx(5 / 6)


def test_table1_repetitiveness_follows_definition_4_2():
    # The repeated pair is in the planned column (AP5, AP6). Definition 4.2 counts only the
    # action that repeats its predecessor: 1 - 1/6, not the paper's 1 - 2/6.
    m = task_metrics(HUMAN, TABLE1, M, opts=Options(repetition_on="planned"))
    assert m["repetitiveness_rate"] == pytest.approx(1 - 1 / 6)
    assert m["repetitiveness_rate"] != pytest.approx(1 - 2 / 6)
    # the executed column ends with "Click Back": no repetition there
    assert task_metrics(HUMAN, TABLE1, M)["repetitiveness_rate"] == 1.0
    assert m["step_success_rate"] == 1.0 and m["recovery_rate"] == 1.0


def test_empty_trajectories():
    empty = AgentTrajectory("e")
    m = task_metrics(HUMAN, empty, M)
    assert m["step_success_rate"] == 0.0
    assert m["recovery_rate"] is None and m["deviations"] == 0
    assert m["repetitiveness_rate"] is None and m["element_accuracy_rate"] is None
    no_gold = task_metrics([], TABLE1, M)
    assert no_gold["step_success_rate"] is None and no_gold["recovery_rate"] is None
    assert no_gold["element_accuracy_rate"] == pytest.approx(5 / 6)


def test_one_step_tasks():
    assert step_success(["Click Buy"], ["click buy!"], M) == 1.0
    assert repetitiveness(["click buy"], M) == 1.0
    rec = recovery(["Click Buy"], ["Click Cart"], M)
    assert (rec.deviations, rec.recoveries, rec.rate) == (1, 0, 0.0)
    assert element_accuracy([AgentStep("Click Buy", "Click Buy")], M) == 1.0
    assert element_accuracy([AgentStep(None, "Click Buy")], M) == 0.0  # planned, not executed


def test_no_deviations_and_all_repeated():
    rec = recovery(HUMAN, HUMAN, M)
    assert (rec.deviations, rec.rate) == (0, None)
    assert repetitiveness(["a", "a", "a", "a"], M) == pytest.approx(1 - 3 / 4)
    assert repetitiveness(["a", "b", "a", "b"], M) == 1.0  # not adjacent: no repetition


def test_recovery_window_and_lookahead():
    gold = ["A", "B", "C"]
    # deviation run of 6 steps before getting back on track: outside a window of 5
    agent = ["x1", "x2", "x3", "x4", "x5", "x6", "A", "B", "C"]
    assert recovery(gold, agent, M).rate == 0.0
    assert recovery(gold, agent, M, Options(recovery_window=6)).rate == pytest.approx(1 / 6)
    # skipping gold step B: y and C deviate from B; C fulfils a later gold step within the
    # look-ahead, so it recovers
    assert recovery(gold, ["A", "y", "C"], M).rate == pytest.approx(1 / 2)
    assert recovery(gold, ["A", "y", "C"], M, Options(lookahead=1)).rate == 0.0
    # every step off the current gold step is a deviation; one on-track step recovers them
    rec = recovery(gold, ["p", "q", "A", "B", "C"], M)
    assert (rec.deviations, rec.recoveries, rec.rate) == (2, 1, 0.5)


def test_recovery_hand_computed_per_definition_4_1():
    gold = ["A", "B", "C", "D"]
    # A ok; x dev (1); B recovers; y dev (2), z dev (3); D fulfils a later gold step than the
    # current C: a deviation (4) that also recovers the y-z run; then nothing is current.
    rec = recovery(gold, ["A", "x", "B", "y", "z", "D", "w"], M)
    assert (rec.deviations, rec.recoveries) == (4, 2) and rec.rate == pytest.approx(2 / 4)
    assert rec.incidents == [(1, 2), (3, 5)]
    # skipping the current gold step alone: one deviation, recovered by itself
    skip = recovery(gold, ["B", "C", "D"], M)
    assert (skip.deviations, skip.recoveries, skip.rate) == (1, 1, 1.0)
    # never back on the gold path: three deviations, no recovery
    assert recovery(gold, ["A", "p", "q", "r"], M).rate == 0.0
    # the old reading (a run of deviations is one incident) would give 2/2 for the first case
    assert rec.rate != 1.0


def test_element_accuracy_hand_computed_per_definition_4_5():
    steps = [
        AgentStep("Click A", "Click A"),  # match
        AgentStep("Click B", None),  # no stated plan: not a match, still an agent step
        AgentStep("Click C", "Click D"),  # mismatch
        AgentStep(None, "Click E"),  # planned, nothing executed: mismatch
    ]
    assert element_accuracy(steps, M) == pytest.approx(1 / 4)
    assert element_accuracy([AgentStep("Click A", None)], M) == 0.0
    assert element_accuracy([], M) is None


def test_each_gold_step_matches_once():
    # the human clicks twice; the agent once: only one of the two gold steps is met
    assert step_success(["Click Next", "Click Next"], ["Click Next"], M) == 0.5
    assert step_success(["Click Next", "Click Next"], ["Click Next", "Click Next"], M) == 1.0


def test_normalize_and_partial_success_rules():
    assert normalize("  Click  'Design'! ") == "click design"
    states = ["Rhode Island", "Massachusetts", "New York"]
    assert partial_success("Which US states border Connecticut?", states, "Massachusetts", M) == (
        pytest.approx(1 / 3)
    )
    assert partial_success("q", ["only one"], "only one", M) is None  # not a req_task
    assert partial_success("q", states, None, M) == 0.0
    # alternatives and no partial-word hits
    assert M.keywords("q", ["color |OR| colour", "York"], "colour of New Yorker") == [True, False]


def test_aggregate_mean_std_skips_undefined():
    rows = [
        {"step_success_rate": 1.0, "recovery_rate": None},
        {"step_success_rate": 0.5, "recovery_rate": 1.0},
    ]
    agg = aggregate(rows)
    assert agg["step_success_rate"] == {"mean": 0.75, "std": 0.25, "tasks": 2}
    assert agg["recovery_rate"] == {"mean": 1.0, "std": 0.0, "tasks": 1}
    assert agg["success_rate"]["mean"] is None


def test_partial_success_on_webarena_tasks(tmp_path):
    refs = load_references(WEBARENA_TASKS)
    assert len(refs) == 812
    multi = [t for t, r in refs.items() if len(r["must_include"]) >= 2]
    assert len(multi) == 78
    # task 3: top-2 best-selling products of 2022
    assert refs["3"]["must_include"] == ["Quest Lumaflex™ Band", "Sprite Stasis Ball 65 cm"]
    both = "The best sellers were the Quest Lumaflex™ Band and the Sprite Stasis Ball 65 cm."
    one = "Only the quest lumaflex™ band sold well"
    agent = {
        "3": AgentTrajectory("3", [AgentStep("stop [..]")], answer=both, success=True),
        "3b": AgentTrajectory("3b", [AgentStep("stop")], answer=one),
    }
    refs["3b"] = refs["3"]
    single = next(t for t, r in refs.items() if len(r["must_include"]) == 1)
    agent[single] = AgentTrajectory(single, [AgentStep("stop")], answer="whatever")
    report = evaluate({}, agent, M, references=refs)
    by = {r["task_id"]: r for r in report["tasks"]}
    assert by["3"]["partial_success_rate"] == 1.0
    assert by["3b"]["partial_success_rate"] == 0.5
    assert by[single]["partial_success_rate"] is None  # single requirement: not applicable
    assert report["aggregate"]["partial_success_rate"]["mean"] == 0.75
    assert report["aggregate"]["success_rate"] == {"mean": 1.0, "std": 0.0, "tasks": 1}
    # a three-item task built from its own reference answers, one item missing
    three = next(t for t in multi if len(refs[t]["must_include"]) == 3)
    items = [x.split("|OR|")[0] for x in refs[three]["must_include"]]
    answer = f"{items[0]}; {items[2]}"
    assert partial_success("", refs[three]["must_include"], answer, M) == pytest.approx(2 / 3)


def test_planned_from_thought():
    t = "Let's think. In summary, the next action I will perform is ```type [522] [AMC]```"
    assert planned_from_thought(t) == "type [522] [AMC]"
    assert planned_from_thought("no plan here") is None


def test_gold_and_agent_files(tmp_path):
    gold = tmp_path / "gold.csv"
    gold.write_text("Task ID,Step Number,Text\n1,2,Click B\n1,1,Click A\n")
    assert read_gold(gold) == {"1": ["Click A", "Click B"]}
    agent = tmp_path / "agent.jsonl"
    agent.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"task_id": "1", "step": 1, "planned": "Click A", "executed": "Click A"},
                {
                    "task_id": "1",
                    "step": 2,
                    "planned": None,
                    "executed": "Click B",
                    "answer": "done",
                    "success": True,
                },
            ]
        )
    )
    trajs = read_agent(agent)
    assert trajs["1"].answer == "done" and trajs["1"].success is True
    assert [s.planned for s in trajs["1"].steps] == ["Click A", None]


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        (
            '{"task_id": "1", "step": 1, "executed": "a"}\n{"task_id": "1", "step": "x"}',
            "agent.jsonl row 2 field 'step': expected an integer",
        ),
        ('{"task_id": "1", "step": 1}', "agent.jsonl row 1 field 'executed': missing"),
        (
            '{"task_id": "1", "step": 1, "executed": 5}',
            "agent.jsonl row 1 field 'executed': expected a string or null",
        ),
        ('\n{"task_id": "1",', "agent.jsonl row 2: not valid JSON"),
        ('{"step": 1, "executed": "a"}', "agent.jsonl row 1 field 'task_id': missing"),
    ],
)
def test_malformed_agent_file_names_row_and_field(tmp_path, content, expect):
    from webshepherd.daemon.offline.evaluation.rows import DataError

    p = tmp_path / "agent.jsonl"
    p.write_text(content)
    with pytest.raises(DataError) as e:
        read_agent(p)
    assert expect in e.value.message
