"""The WebRewardBench harness: row validation, tie-penalized ranks, metrics, resume."""

from __future__ import annotations

import json

import pytest
from webshepherd.daemon.offline.evaluation import rewardbench as rb
from webshepherd.daemon.offline.evaluation.rows import DataError


def row(task="t1", step=0, source="mind2web_test_task", **over):
    r = {
        "task_id": task,
        "step_id": step,
        "intent": "Buy a cable",
        "start_url": "http://shop/",
        "gt_checklist": "Checklist 1: Search\nChecklist 2: Buy",
        "thought_history": [f"look {i}" for i in range(step)],
        "action_history": [f"click('{i}')" for i in range(step)],
        "current_url": "http://shop/s",
        "text_observation": "[1] RootWebArea 'Shop'",
        "chosen": [{"thought": "good", "action": "click('good')"}],
        "rejected": [
            {"thought": "bad", "action": "click('bad1')"},
            {"thought": "bad", "action": "click('bad2')"},
        ],
        "source_name": source,
    }
    r.update(over)
    return r


class Table:
    """Scores from a table keyed by action; counts calls; can fail after some rows."""

    name = "table"

    def __init__(self, rewards, fail_after=None):
        self.rewards, self.calls, self.fail_after = rewards, 0, fail_after

    def score(self, r, samples):
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise KeyboardInterrupt
        self.calls += 1
        return [self.rewards.get(c.action) for c in (r.chosen, *r.rejected)]


def test_rank_penalizes_ties_and_missing_rewards():
    assert rb.rank_of_chosen([0.9, 0.1, 0.2]) == 1
    assert rb.rank_of_chosen([0.5, 0.5, 0.1]) == 2  # a tie ranks the chosen action below
    assert rb.rank_of_chosen([0.5, 0.5, 0.5]) == 3
    assert rb.rank_of_chosen([None, 0.1]) == 2
    assert rb.rank_of_chosen([None, None]) == 2
    assert rb.rank_of_chosen([0.2, None, None]) == 1


def test_metrics_by_hand():
    results = [
        {"source": "a", "task_id": "t1", "rewards": [0.9, 0.1]},  # rank 1
        {"source": "a", "task_id": "t1", "rewards": [0.3, 0.5, 0.1]},  # rank 2
        {"source": "a", "task_id": "t2", "rewards": [0.7, 0.7]},  # tie: rank 2
        {"source": "b", "task_id": "t1", "rewards": [0.8, 0.2]},  # rank 1 (other subset)
    ]
    m = rb.metrics(results)
    assert m["a"]["mrr"] == pytest.approx((1 + 0.5 + 0.5) / 3)
    assert m["a"]["step_accuracy"] == pytest.approx(1 / 3)
    assert m["a"]["trajectory_accuracy"] == 0.0 and m["a"]["tasks"] == 2
    assert m["b"] == {
        "steps": 1,
        "tasks": 1,
        "dropped": 0,
        "mrr": 1.0,
        "step_accuracy": 1.0,
        "trajectory_accuracy": 1.0,
    }
    assert m["pooled"]["mrr"] == pytest.approx(3 / 4) and m["pooled"]["tasks"] == 3
    assert m["mean_of_subsets"]["mrr"] == pytest.approx(((1 + 0.5 + 0.5) / 3 + 1.0) / 2)
    assert list(m) == ["a", "b", "mean_of_subsets", "pooled"]


def test_mind2web_splits_are_also_reported_together_as_the_authors_do():
    results = [
        {"source": "mind2web_test_task", "task_id": "t1", "rewards": [0.9, 0.1]},
        {"source": "mind2web_test_domain", "task_id": "t1", "rewards": [0.1, 0.9]},
        {"source": "webarena", "task_id": "w", "rewards": [0.9, 0.1]},
    ]
    m = rb.metrics(results)
    assert list(m) == [
        "mind2web",
        "mind2web_test_domain",
        "mind2web_test_task",
        "webarena",
        "mean_of_subsets",
        "pooled",
    ]
    # the headline averages the three subsets (not the mind2web union)
    assert m["mean_of_subsets"]["subsets"] == 3
    assert m["mean_of_subsets"]["mrr"] == pytest.approx((1.0 + 0.5 + 1.0) / 3)
    # the same task id in two splits is two tasks (source, task_id)
    assert m["mind2web"]["steps"] == 2 and m["mind2web"]["tasks"] == 2
    assert m["mind2web"]["step_accuracy"] == 0.5 and m["mind2web"]["mrr"] == 0.75


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_run_resumes_after_an_interruption(tmp_path):
    data = tmp_path / "bench.jsonl"
    _write(data, [row("t1", 0), row("t1", 1), row("t2", 0, source="webarena")])
    table = {"click('good')": 0.9, "click('bad1')": 0.2, "click('bad2')": 0.95}
    out = tmp_path / "report.json"
    with pytest.raises(KeyboardInterrupt):
        rb.run(data, Table(table, fail_after=2), out)
    partial = json.loads(out.read_text())
    assert len(partial["rows"]) == 2 and "metrics" not in partial
    again = Table(table)
    report = rb.run(data, again, out)
    assert again.calls == 1  # only the row not scored before
    assert report["complete"] and len(report["rows"]) == 3
    assert report["rows"]["webarena/t2/0"]["rewards"] == [0.9, 0.2, 0.95]
    assert report["metrics"]["pooled"]["mrr"] == 0.5  # bad2 outranks good everywhere
    # other settings do not mix with an old report
    with pytest.raises(Exception, match="other settings"):
        rb.run(data, Table(table), out, samples=3)


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        ({"chosen": [{"thought": "x"}]}, "row 2 field 'chosen[0].action': missing or empty"),
        ({"rejected": []}, "row 2 field 'rejected': empty list"),
        ({"gt_checklist": None}, "row 2 field 'gt_checklist': missing"),
        ({"step_id": "two"}, "row 2 field 'step_id': expected an integer"),
        ({"action_history": "oops"}, "row 2 field 'action_history': expected a list of strings"),
        ({"thought_history": ["a", "b"]}, "row 2 field 'thought_history': 2 thoughts for 1"),
        ({"step_id": 3}, "row 2 field 'action_history': 1 past actions for step 3"),
        ({"text_observation": 5}, "row 2 field 'text_observation': expected a string, got int"),
        ({"chosen": "[1, 2]"}, "row 2 field 'chosen[0]': expected a {thought, action} object"),
    ],
)
def test_malformed_rows_name_row_and_field(tmp_path, change, expect):
    data = tmp_path / "bench.jsonl"
    _write(data, [row("t1", 0), row("t1", 1, **change)])
    with pytest.raises(DataError) as e:
        rb.read_bench(data)
    assert expect in e.value.message and "bench.jsonl" in e.value.message


def test_malformed_files(tmp_path):
    dup = tmp_path / "dup.jsonl"
    _write(dup, [row("t1", 0), row("t1", 0)])
    with pytest.raises(DataError, match="row 2 field 'step_id': duplicate of row 1"):
        rb.read_bench(dup)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(DataError, match="not a readable Parquet file"):
        rb.read_bench(bad)
    (tmp_path / "x.txt").write_text("hi")
    with pytest.raises(DataError, match="unknown file type"):
        rb.read_bench(tmp_path / "x.txt")
    with pytest.raises(DataError, match="no such file"):
        rb.read_bench(tmp_path / "missing.jsonl")


def test_parquet_rows_and_webprm_shape(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    shaped = row("t9", 3, source=None)
    shaped.pop("gt_checklist")
    shaped["checklist"] = "Checklist 1: Search"
    shaped["chosen"] = {"thought": "good", "action": "click('good')"}  # one object (webprm)
    shaped["website_name"] = "shop"
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist([shaped]), str(path))
    [r] = rb.read_bench(path)
    assert (r.source, r.checklist, r.chosen.action, r.key) == (
        "shop",
        "Checklist 1: Search",
        "click('good')",
        "shop/t9/3",
    )


def test_cli_reports_bad_rows(tmp_path, capsys):
    from webshepherd.daemon.cli import main

    data = tmp_path / "bench.jsonl"
    _write(data, [row(), {**row(step=1), "rejected": "nope"}])
    rc = main(
        [
            "eval",
            "rewardbench",
            "--data",
            str(data),
            "--url",
            "ws://127.0.0.1:9",
            "--json",
            str(tmp_path / "r.json"),
        ]
    )
    assert rc == 1
    assert "row 2 field 'rejected'" in capsys.readouterr().err


def test_history_is_cut_at_step_id_like_the_authors():
    """A row whose history lists run past its step (a whole episode's) reaches the engine cut
    at ``step_id``: the judge never sees the step it judges or later ones."""
    r = rb.parse_row(
        "x.jsonl",
        1,
        row(step=2, thought_history=["a", "b", "c", "d"], action_history=["1", "2", "3", "4"]),
    )
    assert [(t.thought, t.action) for t in r.history] == [("a", "1"), ("b", "2")]
    step = rb.step_input(r, samples=5)
    assert step.history == r.history and step.samples == 5
    assert [c.action for c in step.candidates] == [
        "click('good')",
        "click('bad1')",
        "click('bad2')",
    ]
    assert rb.parse_row("x.jsonl", 1, row(step=0)).history == ()


def test_the_headline_is_the_mean_of_subsets_not_the_pooled_rows():
    """Nine rows in four subsets of unequal size: the paper's headline (Table 8) is the mean of
    the subsets' figures (Table 6 rows); pooling weights the big subset more."""
    ranks = {
        "mind2web_test_task": [1, 1, 1, 1, 2],  # MRR 0.9
        "mind2web_test_website": [2, 2],  # 0.5
        "mind2web_test_domain": [1],  # 1.0
        "webarena": [4],  # 0.25
    }
    results = []
    for source, rs in ranks.items():
        for i, rank in enumerate(rs):
            rewards = [0.5] + [0.9] * (rank - 1) + [0.1] * (4 - rank)
            results.append({"source": source, "task_id": f"t{i}", "rewards": rewards})
    m = rb.metrics(results)
    assert m["mean_of_subsets"]["mrr"] == pytest.approx((0.9 + 0.5 + 1.0 + 0.25) / 4)  # 0.6625
    assert m["pooled"]["mrr"] == pytest.approx((4 + 0.5 + 0.5 + 0.5 + 1 + 0.25) / 9)  # 0.75
    assert m["mean_of_subsets"]["steps"] == 9 and m["mean_of_subsets"]["subsets"] == 4
    assert m["mind2web"]["steps"] == 8


def _authors_rank(chosen, rejected):
    """The authors' get_acc_and_mrr: rank = index in the sorted scores + 1 + ties; a missing
    side is [-100] (get_chosen_rejected_scores)."""
    rejected = rejected or [-100]
    ordered = sorted([*rejected, chosen], reverse=True)
    return ordered.index(chosen) + 1 + rejected.count(chosen)


@pytest.mark.parametrize(
    "rewards",
    [
        [0.9, "dropped", 0.2],  # a dropped rejected candidate leaves the ranking
        ["dropped", 0.1, 0.2],  # a dropped chosen one ranks last
        [0.4, "dropped", "dropped"],  # every rejected one dropped: chosen alone, first
        ["dropped", "dropped"],  # nothing left: -100 against -100, a tie
        [0.5, 0.5, "dropped"],
    ],
)
def test_dropped_candidates_rank_as_in_the_authors_pipeline(rewards):
    chosen = -100 if rewards[0] == rb.DROPPED else rewards[0]
    rejected = [r for r in rewards[1:] if r != rb.DROPPED]
    assert rb.rank_of_chosen(rewards) == _authors_rank(chosen, rejected)
    m = rb.metrics([{"source": "s", "task_id": "t", "rewards": rewards}])
    assert m["s"]["dropped"] == rewards.count(rb.DROPPED)


@pytest.mark.model
def test_drop_leaves_out_the_candidates_whose_prompt_does_not_fit(tiny_model_path, tmp_path):
    """``--long-prompts drop``: a candidate whose whole prompt reaches the context is not
    judged (its entry says so); the rest are judged whole. (The rewards themselves are the
    tiny model's: only which candidates were judged is checked.)"""
    from webshepherd.daemon.engine.engine import EngineConfig
    from webshepherd.daemon.engine.loader import load_engine

    engine = load_engine(
        str(tiny_model_path),
        device="cpu",
        config=EngineConfig(max_new_tokens=8, output_reserve=0, context_margin=0),
    )
    try:
        long = {"thought": "a very long thought " * 600, "action": "click('long')"}
        data = tmp_path / "bench.jsonl"
        _write(data, [row("t1", 0, rejected=[{"thought": "bad", "action": "click('b')"}, long])])
        scorer = rb.EngineScorer(engine, long_prompts="drop")
        [bench_row] = rb.read_bench(data)
        tokens = engine.judge_prompt_tokens(rb.step_input(bench_row))
        assert tokens[0] < engine.max_context <= tokens[2]
        rewards = scorer.score(bench_row, 1)
        assert rewards[2] == rb.DROPPED and all(r != rb.DROPPED for r in rewards[:2])
    finally:
        engine.close()
