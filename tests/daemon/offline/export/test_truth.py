"""What each recorded step's truth is (truth.py), and that the exports make rows from truth
only: labels pair a wrong candidate whatever the judge scored, a failed episode's last action
is a negative, the judge's pairs come only when asked and marked, and a generated checklist
is never written as the task's own unless asked and marked.

Recorded through a real daemon on loopback with the SDK (AsyncClient), into real SQLite; the
judge is scripted (tests/fixtures/scripted_judge.py) so each test sets which candidate it
prefers: nothing here depends on what a model writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.engine.checklist_parse import parse_reference_checklist
from webshepherd.daemon.engine.types import ParsedChecklist
from webshepherd.daemon.offline.export.sessions import Summary
from webshepherd.daemon.offline.export.trl import trl_preference_rows, trl_prm_rows
from webshepherd.daemon.offline.export.truth import (
    ProvenBadStep,
    StepTruth,
    Truth,
    proven_bad_step,
    session_truths,
)
from webshepherd.daemon.offline.export.webprm import webprm_rows
from webshepherd.daemon.offline.report.render import render_report
from webshepherd.daemon.recorder import History
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.common import Candidate
from webshepherd.protocol.steps import step_label

from tests.fixtures.daemon import REFERENCE, TEST_TOKEN
from tests.fixtures.scripted_judge import Judgement, ScriptedJudge, scripted_daemon

Items = list[Literal["yes", "in_progress", "no"]]
HOME = {"url": "http://shop.local/", "axtree": "[1] RootWebArea 'Shop'\n\t[2] searchbox 'Search'"
        "\n\t[3] link 'Deals'\n\t[4] link 'Help'"}  # fmt: skip
RESULTS = {"url": "http://shop.local/search?q=cable", "axtree": "[1] RootWebArea 'Results'\n\t"
           "[7] link 'Cable 4.99'\n\t[8] link 'Cable 9.99'\n\t[9] button 'Next'"}  # fmt: skip
SEARCH, DEALS, HELP = "fill('2', 'usb-c cable')", "click('3')", "click('4')"
CHEAP, DEAR, NEXT = "click('7')", "click('8')", "click('9')"
# the judge prefers the wrong candidates: a deal link over the search, the dear cable
RATED: dict[tuple[str, str], Judgement] = {
    (HOME["url"], SEARCH): (0.5, (2, 0), "searches"),
    (HOME["url"], DEALS): (0.9, (0, 0), "deals"),
    (HOME["url"], HELP): (0.1, (0, 0), "help"),
    (RESULTS["url"], CHEAP): (0.4, (2, 2), "cheapest"),
    (RESULTS["url"], DEAR): (0.7, (2, 0), "dear"),
    (RESULTS["url"], NEXT): (0.2, (2, 0), "next page"),
}
STEPS = [(HOME, SEARCH, [SEARCH, DEALS, HELP]), (RESULTS, CHEAP, [CHEAP, DEAR, NEXT])]


class ChecklistWriter(ScriptedJudge):
    """The scripted judge, writing the session's checklist itself when none is given (the
    daemon records it as ``generated``)."""

    def make_checklist(self, intent: str, start_url: str, axtree: str) -> ParsedChecklist:
        return parse_reference_checklist(GENERATED)


GENERATED = "Checklist 1: Put a cable in the cart\nChecklist 2: Pay for the cable"


@dataclass
class Run:
    session_id: str
    steps: list[int]  # the scored step of each of STEPS


async def record(
    c: AsyncClient,
    outcome: Literal["success", "failure", "unknown"],
    labels: Sequence[tuple[int, str, Items]] = (),
    checklist: str | None = REFERENCE,
    steps: Sequence[tuple[dict[str, str], str, list[str]]] = STEPS,
) -> Run:
    """One session of ``steps`` (page, executed action, candidates), each candidate scored,
    ``labels`` given as ``(index into steps, action, items)``, ended with ``outcome``."""
    s = await c.start_session(
        "Buy the cheapest usb-c cable", HOME["url"], checklist=checklist, observation=HOME
    )
    scored = []
    for k, (page, action, cands) in enumerate(steps):
        if k:
            await s.observe(page["url"], page["axtree"])
        r = await s.score([Candidate(thought=f"t {a}", action=a) for a in cands], approval="never")
        scored.append(r.step)
        await s.act(action, f"t {action}")
    for k, action, items in labels:
        await s.label(scored[k], action, items)
    await s.end(outcome)
    return Run(s.session_id, scored)


def _history(tmp_path: Path) -> History:
    return History.open(tmp_path / "data" / DB_NAME)


def truths(tmp_path: Path, sid: str, include_judged: bool = False) -> list[StepTruth]:
    history = _history(tmp_path)
    try:
        tl = history.timeline(sid)
        assert tl is not None
        return session_truths(tl, include_judged)
    finally:
        history.close()


def export(tmp_path: Path, make: Any, sid: str, **kw: Any) -> tuple[list[dict[str, Any]], Summary]:
    history = _history(tmp_path)
    summary = Summary()
    try:
        (s,) = [s for s in history.sessions() if s.session_id == sid]
        return list(make(history, [s], summary=summary, **kw)), summary
    finally:
        history.close()


def action_of(message: list[dict[str, str]]) -> str:
    return message[0]["content"].split("\nAction: ")[1]


def judge() -> ScriptedJudge:
    return ChecklistWriter(dict(RATED))


async def test_a_labelled_wrong_candidate_the_judge_preferred_still_makes_a_pair(
    tmp_path: Path,
) -> None:
    async with (
        scripted_daemon(tmp_path, judge()) as server,
        AsyncClient(server.url, TEST_TOKEN) as c,
    ):
        run = await record(
            c,
            "success",
            labels=[(0, SEARCH, ["yes", "no"]), (0, DEALS, ["no", "no"])],
        )
    first, second = truths(tmp_path, run.session_id)
    assert first.chosen == Truth(SEARCH, f"t {SEARCH}", "label", "environment")
    assert first.rejected == [Truth(DEALS, f"t {DEALS}", "label", "environment")]
    assert first.unknown == [HELP]  # a clear negative the judge scored lower: still no truth
    # an unlabelled step of a successful episode: its executed action, nothing rejected
    assert second.chosen == Truth(CHEAP, f"t {CHEAP}", "outcome", "success")
    assert second.rejected == [] and second.unknown == [DEAR, NEXT]

    rows, summary = export(tmp_path, webprm_rows, run.session_id)
    (row,) = rows
    assert row["chosen"]["action"] == SEARCH and row["chosen_source"] == "label"
    assert [r["action"] for r in row["rejected"]] == [DEALS]
    assert row["rejected_source"] == ["label"]
    assert summary.skipped["no_rejected"] == 1  # the second step: nothing known wrong there

    pairs, _ = export(tmp_path, trl_preference_rows, run.session_id)
    (pair,) = pairs
    assert action_of(pair["rejected"]) == DEALS
    assert (pair["chosen_source"], pair["rejected_source"]) == ("label", "label")
    assert pair["rejected_reward"] > pair["chosen_reward"]  # the judge preferred it: no matter


async def test_without_truth_the_judge_makes_rows_only_when_asked_and_marked(
    tmp_path: Path,
) -> None:
    async with (
        scripted_daemon(tmp_path, judge()) as server,
        AsyncClient(server.url, TEST_TOKEN) as c,
    ):
        run = await record(c, "success")
    assert [t.rejected for t in truths(tmp_path, run.session_id)] == [[], []]
    for make in (webprm_rows, trl_preference_rows):
        rows, summary = export(tmp_path, make, run.session_id)
        assert rows == [] and summary.skipped["no_rejected"] == 2
    prm, _ = export(tmp_path, trl_prm_rows, run.session_id)
    (full,) = prm  # the successful run, all True: the env's outcome
    assert full["labels"] == [True, True] and full["sources"] == ["outcome", "outcome"]

    # asked: the clear negatives the judge scored below the executed action, marked judge
    first, second = truths(tmp_path, run.session_id, include_judged=True)
    assert [(t.action, t.source) for t in first.rejected] == [(HELP, "judge")]
    assert [(t.action, t.source) for t in second.rejected] == [(NEXT, "judge")]
    assert first.unknown == [DEALS] and second.unknown == [DEAR]  # scored above: no pair
    rows, _ = export(tmp_path, webprm_rows, run.session_id, include_judged=True)
    assert [(r["chosen_source"], r["rejected_source"]) for r in rows] == [
        ("outcome", ["judge"]),
        ("outcome", ["judge"]),
    ]
    pairs, _ = export(tmp_path, trl_preference_rows, run.session_id, include_judged=True)
    assert [(action_of(p["rejected"]), p["rejected_source"]) for p in pairs] == [
        (HELP, "judge"),
        (NEXT, "judge"),
    ]
    prm, _ = export(tmp_path, trl_prm_rows, run.session_id, include_judged=True)
    assert [r["sources"] for r in prm] == [
        ["outcome", "outcome"],
        ["judge"],
        ["outcome", "judge"],
    ]


async def test_a_failed_episodes_last_action_is_a_negative(tmp_path: Path) -> None:
    async with (
        scripted_daemon(tmp_path, judge()) as server,
        AsyncClient(server.url, TEST_TOKEN) as c,
    ):
        steps = [(HOME, SEARCH, [SEARCH, DEALS]), (RESULTS, DEAR, [CHEAP, DEAR])]
        failed = await record(c, "failure", steps=steps)
        three = [(HOME, SEARCH, [SEARCH, DEALS, HELP]), (RESULTS, DEAR, [CHEAP, DEAR, NEXT])]
        truth: list[tuple[int, str, Items]] = [(1, CHEAP, ["yes", "yes"]), (1, NEXT, ["yes", "no"])]
        truth.append((0, HELP, ["no", "no"]))  # step 0: only a wrong one labelled
        labelled = await record(c, "failure", steps=three, labels=truth)
        misled = [(HOME, DEALS, three[0][2]), steps[1]]
        truth = [(0, SEARCH, ["yes", "no"]), (0, HELP, ["no", "no"])]
        astray = await record(c, "failure", steps=misled, labels=truth)
        unknown = await record(c, "unknown", steps=steps)
    first, last = truths(tmp_path, failed.session_id)
    assert first.chosen is None and first.rejected == [] and first.unknown == [SEARCH, DEALS]
    assert last.chosen is None
    assert last.rejected == [Truth(DEAR, f"t {DEAR}", "outcome", "failure")]
    assert last.unknown == [CHEAP]
    prm, _ = export(tmp_path, trl_prm_rows, failed.session_id)
    (row,) = prm  # the step it ended on, after the actions before it
    assert row["labels"] == [False] and row["sources"] == ["outcome"]
    assert row["completions"][0].endswith(f"Action: {DEAR}")
    assert "Previous actions:\n" in row["prompt"] and SEARCH in row["prompt"]
    assert export(tmp_path, webprm_rows, failed.session_id)[0] == []  # nothing right known

    # a label says which one was right, even in a failed episode: a pair with the outcome's
    first, last = truths(tmp_path, labelled.session_id)
    # a step with a wrong candidate labelled, none right: the executed search is not blamed
    assert first.chosen is None and first.rejected == [
        Truth(HELP, f"t {HELP}", "label", "environment")
    ]
    assert first.unknown == [SEARCH, DEALS]
    assert last.chosen == Truth(CHEAP, f"t {CHEAP}", "label", "environment")
    assert last.rejected == [
        Truth(NEXT, f"t {NEXT}", "label", "environment"),
        Truth(DEAR, f"t {DEAR}", "outcome", "failure"),
    ]
    (row,), _ = export(tmp_path, webprm_rows, labelled.session_id)
    assert row["chosen"]["action"] == CHEAP and row["chosen_source"] == "label"
    assert [r["action"] for r in row["rejected"]] == [NEXT, DEAR]
    assert row["rejected_source"] == ["label", "outcome"]

    # labels put another candidate first where the failed episode went astray: it is blamed
    first, _ = truths(tmp_path, astray.session_id)
    assert first.chosen == Truth(SEARCH, f"t {SEARCH}", "label", "environment")
    assert first.rejected == [
        Truth(HELP, f"t {HELP}", "label", "environment"),
        Truth(DEALS, f"t {DEALS}", "outcome", "failure"),
    ]

    # an interrupted episode (outcome unknown) says nothing of its last action
    assert all(t.chosen is None and t.rejected == [] for t in truths(tmp_path, unknown.session_id))


async def test_a_generated_checklist_is_written_only_when_asked_and_marked(
    tmp_path: Path,
) -> None:
    labels: list[tuple[int, str, Items]] = [(0, SEARCH, ["no", "in_progress"])]
    labels.append((0, DEALS, ["no", "no"]))
    async with (
        scripted_daemon(tmp_path, judge()) as server,
        AsyncClient(server.url, TEST_TOKEN) as c,
    ):
        generated = await record(c, "success", labels=labels, checklist=None)
        reference = await record(c, "success", labels=labels)
    (row,), _ = export(tmp_path, webprm_rows, generated.session_id)
    assert row["checklist"] == "" and row["checklist_target_list"] == "[]"
    assert row["checklist_source"] is None
    (asked,), _ = export(tmp_path, webprm_rows, generated.session_id, generated_checklists=True)
    assert asked["checklist"] == GENERATED and asked["checklist_source"] == "generated"
    assert asked["checklist_target_list"] == ('["Put a cable in the cart", "Pay for the cable"]')
    (own,), _ = export(tmp_path, webprm_rows, reference.session_id)
    assert own["checklist"] == REFERENCE and own["checklist_source"] == "reference"

    prm, _ = export(tmp_path, trl_prm_rows, generated.session_id)
    assert prm and all("Checklist:" not in r["prompt"] for r in prm)
    assert all(r["checklist_source"] is None for r in prm)
    prm, _ = export(tmp_path, trl_prm_rows, generated.session_id, generated_checklists=True)
    assert all(f"Checklist:\n{GENERATED}" in r["prompt"] for r in prm)
    assert all(r["checklist_source"] == "generated" for r in prm)
    prm, _ = export(tmp_path, trl_prm_rows, reference.session_id)
    assert all(f"Checklist:\n{REFERENCE}" in r["prompt"] for r in prm)
    assert all(r["checklist_source"] == "reference" for r in prm)


async def test_replay_and_rollout_labels_are_truth_the_preference_exports_pair_and_the_report_shows_proven(  # noqa: E501
    tmp_path: Path,
) -> None:
    """What ``webshepherd blame`` and ``label rollouts`` record (labels with source
    ``replay`` and ``rollout``, sent after the run) makes rows marked with that source, and a
    replay's lost executed action is the report's proven first bad step."""
    proof = "blame: proven first bad step: from step 2, 'click(8)' won"
    async with (
        scripted_daemon(tmp_path, judge()) as server,
        AsyncClient(server.url, TEST_TOKEN) as c,
    ):
        run = await record(c, "failure")
        sid, (first, second) = run.session_id, run.steps
        levels: list[tuple[str, Literal["yes", "in_progress", "no"]]] = [
            (SEARCH, "yes"), (DEALS, "no"), (HELP, "in_progress")
        ]  # fmt: skip
        for action, level in levels:
            await c.label(sid, first, action, [level] * 2, source="rollout", note="rollouts")
        await c.label(sid, second, CHEAP, ["no", "no"], source="replay", note=proof)
        await c.label(sid, second, DEAR, ["yes", "yes"], source="replay", note=proof)
    one, two = truths(tmp_path, run.session_id)
    assert one.chosen == Truth(SEARCH, f"t {SEARCH}", "rollout", "rollout")
    assert [(t.action, t.source) for t in one.rejected] == [(DEALS, "rollout"), (HELP, "rollout")]
    assert two.chosen == Truth(DEAR, f"t {DEAR}", "replay", "replay")
    assert two.rejected == [Truth(CHEAP, f"t {CHEAP}", "replay", "replay")]

    pairs, _ = export(tmp_path, trl_preference_rows, run.session_id)
    got = {(action_of(p["rejected"]), p["chosen_source"], p["rejected_source"]) for p in pairs}
    assert got == {(DEALS, "rollout", "rollout"), (HELP, "rollout", "rollout"),
                   (CHEAP, "replay", "replay")}  # fmt: skip
    rows, _ = export(tmp_path, webprm_rows, run.session_id)
    assert [(r["chosen"]["action"], r["chosen_source"], r["rejected_source"]) for r in rows] == [
        (SEARCH, "rollout", ["rollout", "rollout"]),
        (DEAR, "replay", ["replay"]),
    ]

    history = _history(tmp_path)
    try:
        tl = history.timeline(run.session_id)
        assert tl is not None
        assert proven_bad_step(tl) == ProvenBadStep(second, CHEAP, proof)
        html = render_report(tl)
    finally:
        history.close()
    assert f"{step_label(second)}</a> (proven by replays): {CHEAP} lost" in html.replace(
        "&#x27;", "'"
    )
    assert "<dt>judge's guess (reward)</dt>" in html
