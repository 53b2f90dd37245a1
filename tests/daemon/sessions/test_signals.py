"""Live process signals: the pure rules, the session machine's effects, and a real daemon
pushing a repeated action to a subscriber (and recording it)."""

from __future__ import annotations

import itertools

from webshepherd.daemon.engine.types import (
    CandidateScore,
    ChecklistItem,
    ItemScore,
    LabelProbs,
    ParsedChecklist,
    SampleScore,
    StepScore,
)
from webshepherd.daemon.sessions import Publish, RunScore, SessionCore
from webshepherd.daemon.sessions.approvals import ApprovalPolicy
from webshepherd.daemon.sessions.signals import SignalBook, follows
from webshepherd.protocol import requests as rq
from webshepherd.protocol.common import AgentInfo, Timing

STEP = AgentInfo()
OBS = {"url": "http://shop.local/", "axtree": "[1] RootWebArea 'Shop'\n\t[2] button 'Next'"}


def test_repeated_action_needs_the_same_observation():
    book = SignalBook()
    book.observed("s", "http://a/", "tree")
    assert book.action("s", 0, "click('2')", None, STEP) == []
    # same page, same action: a repeat
    [sig] = book.action("s", 0, "click( '2')", None, STEP)
    assert (sig.kind, sig.repeats, sig.ok) == ("repeated_action", 2, False)
    [sig] = book.action("s", 0, "click('2')", None, STEP)
    assert sig.repeats == 3
    # the page changed: the same action again is progress, not a loop
    book.observed("s", "http://a/", "tree 2")
    assert book.action("s", 1, "click('2')", None, STEP) == []
    # a different action on the same page is no repeat either
    assert book.action("s", 1, "click('3')", None, STEP) == []
    # sessions are tracked apart
    book.observed("t", "http://a/", "tree 2")
    assert book.action("t", 0, "click('3')", None, STEP) == []


def test_element_mismatch_from_the_announced_action():
    book = SignalBook()
    book.observed("s", "u", "t")
    ok = "In summary, the next action I will perform is ```click [12]```"
    assert book.action("s", 0, "click [12]", ok, STEP) == []
    bad = "In summary, the next action I will perform is ```type [5] [AMC]```"
    [sig] = book.action("s", 1, "scroll [down]", bad, STEP)
    assert (sig.kind, sig.planned, sig.rate) == ("element_mismatch", "type [5] [AMC]", 0.5)
    # a thought without an announcement says nothing
    assert book.action("s", 2, "click [7]", "I click the button", STEP) == []


def test_plan_adherence_for_plan_agents():
    plan = ["Click the Products link", "Click the Electronics category", "Click Smartphones filter"]
    agent = AgentInfo(planning="plan", plan=plan)
    book = SignalBook()
    [a] = book.action("s", 0, "click('40')", "Open Products", agent)
    assert (a.ok, a.plan_step, a.rate) == (True, 1, 1.0)
    [b] = book.action("s", 1, "click('9')", "About us looks useful", agent)
    assert (b.ok, b.plan_step, b.rate) == (False, 2, 0.5)
    [c] = book.action("s", 2, "click('77')", "the Smartphones filter", agent)
    assert (c.ok, c.plan_step) == (True, 3) and "skips plan step 2" in c.detail
    # the plan is done: no more adherence signals; step agents never get them
    assert book.action("s", 3, "click('1')", "x", agent) == []
    assert book.action("t", 0, "click('1')", "Products", AgentInfo(plan=plan)) == []
    assert follows("Type the city", "fill('4', 'Boston')", "type the city name") is True
    assert follows("Type the city", "click('4')", "open menu") is False


def test_session_machine_publishes_signals_after_the_action_event():
    ids = itertools.count(1)
    core = SessionCore(ApprovalPolicy(0.3, 0.3), new_id=lambda: f"sess{next(ids)}")
    start = core.start(1, rq.SessionStart(id="a", intent="Buy", observation=OBS))
    sid = next(e for e in start if isinstance(e, Publish)).session_id
    first = core.action(1, rq.Action(id="b", session_id=sid, action="click('2')"))
    assert not [e for e in first if isinstance(e, Publish) and e.event.type == "signal"]
    again = core.action(1, rq.Action(id="c", session_id=sid, action="click('2')"))
    pubs = [e for e in again if isinstance(e, Publish)]
    assert [p.event.type for p in pubs] == ["action", "signal"]
    assert pubs[1].exclude is None  # the agent gets it too
    assert pubs[1].event.kind == "repeated_action"
    # a new observation resets the loop detector
    core.observe(1, rq.Observe(id="d", session_id=sid, url=OBS["url"], axtree="other"))
    third = core.action(1, rq.Action(id="e", session_id=sid, action="click('2')"))
    assert [e.event.type for e in third if isinstance(e, Publish)] == ["action"]


def test_stalled_after_k_judged_steps_without_an_advance():
    book = SignalBook()
    agent = AgentInfo(stalled_after=2)
    assert book.action("s", 0, "fill('2', 'x')", None, agent, {1: 1, 2: 0}) == []  # advances
    assert book.action("s", 1, "scroll(0, 200)", None, agent, {1: 1, 2: 0}) == []  # 1 stalled
    assert book.action("s", 2, "noop()", None, agent, None) == []  # not judged: not counted
    [sig] = book.action("s", 3, "scroll(0, 200)", None, agent, {1: 0, 2: 0})
    assert (sig.kind, sig.ok, sig.stalled_steps, sig.step) == ("stalled", False, 2, 3)
    assert "last advance at step 1" in sig.detail  # index 0, read as step 1 (steps.py)
    saved = book.snapshot("s")
    [again] = book.action("s", 4, "scroll(0, 200)", None, agent, {1: 1, 2: 0})
    assert again.stalled_steps == 3  # sent again each further step
    book.restore("s", saved)  # a rolled-back step leaves the count as it was
    assert book.action("s", 4, "click('9')", None, agent, {1: 2, 2: 0}) == []  # progress
    # the default k is 3
    other = [book.action("t", n, "noop()", None, STEP, {1: 0}) for n in range(3)]
    assert [len(x) for x in other] == [0, 0, 1] and other[2][0].stalled_steps == 3


def _judged(levels_per_candidate: list[int]) -> StepScore:
    """A step's scores: each candidate's one checklist item at a given likeliest label."""
    probs = {0: LabelProbs(0.0, 0.0, 1.0), 1: LabelProbs(0.1, 0.8, 0.1), 2: LabelProbs(1, 0, 0)}
    cands = []
    for k, level in enumerate(levels_per_candidate):
        items = (ItemScore(1, probs[level]),)
        sample = SampleScore(text="f", items=items, reward=0.5)
        cands.append(CandidateScore(k, 0.5, items, "f", (sample,), 1))
    return StepScore(tuple(cands), prompt_tokens=1, generated_tokens=1, prefix_shared=True)


def test_session_machine_reads_the_executed_candidates_levels():
    """The executed action's own judgement decides, not the best candidate's."""
    ids = itertools.count(1)
    core = SessionCore(ApprovalPolicy(None, None), new_id=lambda: f"sess{next(ids)}")
    start = core.start(
        1,
        rq.SessionStart(id="a", intent="Buy", observation=OBS, agent=AgentInfo(stalled_after=1)),
    )
    sid = next(e for e in start if isinstance(e, Publish)).session_id
    core.checklist_ready(sid, ParsedChecklist((ChecklistItem(1, "Buy"),), "1. Buy"))
    signals = []
    for n, executed in enumerate(["click('1')", "click('2')"]):
        if n:
            core.observe(1, rq.Observe(id=f"o{n}", session_id=sid, url="u", axtree=f"t{n}"))
        score = rq.Score(
            id=f"c{n}",
            session_id=sid,
            approval="never",
            candidates=[{"action": "click('1')"}, {"action": "click('2')"}],
        )
        (job,) = [e for e in core.score(1, score) if isinstance(e, RunScore)]
        # click('1') advances item 1 at the first step only; click('2') never does
        core.score_done(job, _judged([1, 0] if n == 0 else [2, 0]), Timing(queue_ms=0, model_ms=0))
        effects = core.action(1, rq.Action(id=f"x{n}", session_id=sid, action=executed))
        signals += [e.event for e in effects if isinstance(e, Publish) and e.event.type == "signal"]
    [sig] = signals
    assert (sig.kind, sig.step, sig.stalled_steps) == ("stalled", 1, 1)


async def test_daemon_pushes_repeated_action_to_a_subscriber(daemon):
    monitor = await daemon.client(role="monitor", name="tui")
    await monitor.request({"type": "subscribe", "sessions": "*"})
    agent = await daemon.client()
    started = await agent.request(
        {
            "type": "session.start",
            "intent": "Go to the next page",
            "observation": OBS,
            "checklist": "Checklist 1: Open the next page",
        }
    )
    sid = started["session_id"]
    for rid in ("a1", "a2"):
        reply = await agent.request(
            {"id": rid, "type": "action", "session_id": sid, "action": "click('2')"}
        )
        assert reply["type"] == "action.recorded"
    sig = await monitor.wait_for("signal", timeout=30)
    assert sig["session_id"] == sid and sig["kind"] == "repeated_action"
    assert sig["repeats"] == 2 and sig["ok"] is False
    own = await agent.wait_for("signal", timeout=30)
    assert own["kind"] == "repeated_action"
    # stored: session.get returns it among the recorded events
    got = await monitor.request({"type": "session.get", "session_id": sid})
    assert [e for e in got["events"] if e["type"] == "signal"] == [sig]
