"""``eval recorded``'s core: the steps to rank come from a recording made through a real daemon
with the SDK and the shop's labels; the shipped tiny judge ranks them in process and as a
daemon serves it (the same rewards); ties, missing rewards and unparsed outputs are counted
as the module says; what is not a recording is named."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.engine.types import StepInput
from webshepherd.daemon.offline.evaluation.recorded import (
    Figures,
    PickSet,
    PickStep,
    compare,
    model_judge,
    more_unparsed,
    pick_steps,
    ranked,
    served_judge,
    table,
)
from webshepherd.daemon.offline.export.siblings import better
from webshepherd.daemon.recorder import History
from webshepherd.protocol.common import CandidateResult, SampleResult, Turn
from webshepherd.protocol.errors import WebShepherdError

from tests.fixtures.daemon import FAST, TEST_TOKEN, StartDaemon

#: the shop recording is made by the first test that asks for it, and the tiny judge scores
#: each candidate: a minute or two on 2 idle cores, several on a loaded box
pytestmark = [pytest.mark.model, pytest.mark.timeout(900)]


@pytest.fixture
def recording(shop_recording: Path) -> Path:
    return shop_recording


def test_the_steps_to_rank_are_the_recorded_candidates_with_truth(recording: Path) -> None:
    picks = pick_steps(recording)
    history = History.open(recording / DB_NAME)
    try:
        timelines = {s.session_id: history.timeline(s.session_id) for s in history.sessions()}
    finally:
        history.close()
    assert len(timelines) == 2
    assert sorted(picks.checklists.values()) == ["generated", "reference"]
    assert picks.steps and {s.session_id for s in picks.steps} <= set(timelines)
    for p in picks.steps:
        tl = timelines[p.session_id]
        assert tl is not None and tl.checklist is not None
        st = next(s for s in tl.steps if s.step == p.step)
        scored = [c.candidate.action for c in st.scoring.candidates] if st.scoring else []
        actions = [c.action for c in p.inp.candidates]
        assert actions == scored and len(actions) >= 2
        labels = {lab.action: lab.items for lab in st.labels}
        right = actions[p.right]
        # the shop's labels put the right candidate ahead of another, and none ahead of it
        assert not any(better(labels[a], labels[right]) for a in actions)
        assert any(better(labels[right], labels[a]) for a in actions)
        assert p.source == "label" and p.checklist == tl.checklist.source
        assert p.inp.checklist is not None and p.inp.checklist.text == tl.checklist.text
        ran = [(x.thought or "", x.action) for x in tl.actions if x.step < p.step]
        assert [(t.thought, t.action) for t in p.inp.history] == ran
        assert p.inp.axtree == st.axtree and p.inp.current_url == st.url
    one = picks.steps[0].session_id
    assert {s.session_id for s in pick_steps(recording, [one]).steps} == {one}


@pytest.mark.asyncio(loop_scope="function")
async def test_the_tiny_judge_in_process_and_served_ranks_alike(
    recording: Path, start_daemon: StartDaemon
) -> None:
    picks = pick_steps(recording)
    served = await start_daemon()
    judges = [
        model_judge("tiny", "cpu", FAST.max_new_tokens, "in process"),  # as the daemon's
        served_judge(served.url, TEST_TOKEN, "served"),
    ]
    cmp = await asyncio.to_thread(compare, picks, judges)
    here, there = cmp.figures
    for fig in cmp.figures:
        assert fig.steps == len(picks.steps)
        assert fig.outputs == sum(len(p.inp.candidates) for p in picks.steps)
    for row in cmp.rows:
        a, b = row["judges"]["in process"], row["judges"]["served"]
        assert a["rewards"] == pytest.approx(b["rewards"], abs=1e-6)
        right = a["rewards"][row["right"]]
        others = [r for i, r in enumerate(a["rewards"]) if i != row["right"]]
        first = right is not None and all(o is None or right > o for o in others)
        assert (a["rank"] == 1) == first
    assert here.picked == sum(r["judges"]["in process"]["rank"] == 1 for r in cmp.rows)
    assert (here.picked, here.unparsed_count) == (there.picked, there.unparsed_count)
    # the tiny judge knows this shop: it ranks the shop's right candidate first mostly
    assert here.picked > here.steps / 2
    lines = table(cmp)
    assert "judge 1: in process" in lines and "judge 2: served" in lines
    row = next(line for line in lines if line.startswith("pick accuracy:"))
    assert row.split()[2:4] == [f"{here.picked}/{here.steps}", f"({here.picked / here.steps:.0%})"]
    assert "1 generated, 1 reference" in lines[0]


def _step(n: int, right: int = 0) -> PickStep:
    cands = tuple(Turn("", f"click('{i}')") for i in range(n))
    inp = StepInput("task", "http://x/", "[1] RootWebArea", None, (), cands)
    return PickStep("s", 0, inp, right, "label", "reference")


def _result(i: int, reward: float | None, why: str | None = None) -> CandidateResult:
    sample = SampleResult(reward=reward, text="", unparsed=why)  # type: ignore[arg-type]
    return CandidateResult(
        index=i, reward=reward, samples=[sample], parsed_samples=int(reward is not None)
    )


def test_a_tie_or_a_missing_reward_is_not_a_pick_and_unparsed_outputs_are_counted() -> None:
    assert ranked(_step(3), [_result(0, 0.6), _result(1, 0.5), _result(2, 0.1)]).rank == 1
    tie = ranked(_step(2), [_result(0, 0.5), _result(1, 0.5)])
    assert not tie.picked and tie.rank == 2
    none = ranked(_step(2, right=1), [_result(0, None, "no_label"), _result(1, None, "no_answer")])
    assert none.rank == 2 and sorted(none.unparsed) == ["no_answer", "no_label"]
    low = ranked(_step(2, right=1), [_result(0, None, "cut_by_limit"), _result(1, 0.01)])
    assert low.picked and low.unparsed == ["cut_by_limit"] and low.outputs == 2
    fig = Figures("j")
    for r in (tie, none, low):
        fig.add(r)
    assert (fig.picked, fig.steps, fig.unparsed_count, fig.outputs) == (1, 3, 3, 6)
    assert fig.as_dict()["unparsed_by_reason"] == {"cut_by_limit": 1, "no_answer": 1,
                                                   "no_label": 1}  # fmt: skip
    with pytest.raises(WebShepherdError, match="2 results for 3 candidates"):
        ranked(_step(3), [_result(0, 0.1), _result(1, 0.2)])


def test_a_trained_judge_whose_outputs_stop_parsing_is_warned_of() -> None:
    base, trained = Figures("base", outputs=100), Figures("trained", outputs=101)
    base.unparsed.update(no_label=8)
    trained.unparsed.update(no_label=20, cut_by_limit=5)
    warning = more_unparsed(base, trained)
    assert warning is not None and "25 of 101 unparsed against 8 of 100" in warning
    assert more_unparsed(trained, base) is None
    assert more_unparsed(base, base) is None


def test_what_is_not_a_recording_is_named(recording: Path, tmp_path: Path) -> None:
    with pytest.raises(WebShepherdError, match="no recording here"):
        pick_steps(tmp_path / "nowhere")
    text = tmp_path / "notes.txt"
    text.write_text("not a database, just words\n" * 20, encoding="utf-8")
    with pytest.raises(WebShepherdError, match="not a webshepherd recording"):
        pick_steps(text)
    other = tmp_path / "other.sqlite3"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(WebShepherdError, match="not a webshepherd recording"):
        pick_steps(other)
    with pytest.raises(WebShepherdError, match="--session: no recorded session nope"):
        pick_steps(recording, ["nope"])
    assert pick_steps(recording / DB_NAME).steps  # the file itself is a recording too


def test_a_pick_set_keeps_the_sessions_asked_for(recording: Path) -> None:
    picks = pick_steps(recording)
    first = picks.sessions()[0]
    only = picks.only([first])
    assert only.sessions() == [first] and set(only.checklists) == {first}
    both = PickSet("")
    both.add(only)
    both.add(picks.only(picks.sessions()[1:]))
    assert [s.key for s in both.steps] == [s.key for s in picks.steps]
