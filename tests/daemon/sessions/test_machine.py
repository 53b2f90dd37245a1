"""The sans-I/O session state machine: messages in, effects out (no sockets, no engine)."""

from __future__ import annotations

import itertools

import pytest
from webshepherd.daemon.engine.types import (
    CandidateScore,
    ChecklistItem,
    ItemScore,
    LabelProbs,
    ParsedChecklist,
    SampleScore,
    StepScore,
)
from webshepherd.daemon.records import ScoreRecord, ScorerRecord
from webshepherd.daemon.sessions import (
    ApprovalClosed,
    AwaitApproval,
    Publish,
    Record,
    Reply,
    RunChecklist,
    RunScore,
    Scorer,
    SessionCore,
)
from webshepherd.daemon.sessions.approvals import ApprovalPolicy
from webshepherd.protocol import requests as rq
from webshepherd.protocol.common import Timing, Turn
from webshepherd.protocol.errors import ProtocolError, SessionClosedError, UnknownSessionError

OWNER, MONITOR = 1, 2
OBS = {"url": "http://shop.local/", "axtree": "RootWebArea 'Shop'"}


def make_core(**kw) -> SessionCore:
    ids = itertools.count(1)
    clock = itertools.count(1000)
    return SessionCore(
        ApprovalPolicy(0.3, 0.3),
        default_samples=3,
        approval_timeout_s=7.0,
        clock=lambda: float(next(clock)),
        new_id=lambda: f"sess{next(ids)}",
        **kw,
    )


def kinds(effects) -> list[str]:
    out = []
    for e in effects:
        if isinstance(e, Record):
            out.append(f"record:{e.op}")
        elif isinstance(e, Reply):
            out.append(f"reply:{e.message.type}")
        elif isinstance(e, Publish):
            out.append(f"publish:{e.event.type}")
        else:
            out.append(type(e).__name__)
    return out


def step_score(*rewards: float | None) -> StepScore:
    cands = []
    for k, r in enumerate(rewards):
        items = () if r is None else (ItemScore(1, LabelProbs(r, 0.0, 1 - r)),)
        sample = SampleScore(text=f"feedback {k}", items=items, reward=r)
        cands.append(CandidateScore(k, r, items, f"feedback {k}", (sample,), 0 if r is None else 1))
    return StepScore(tuple(cands), prompt_tokens=10, generated_tokens=5, prefix_shared=True)


def started(core: SessionCore) -> str:
    effects = core.start(OWNER, rq.SessionStart(id="s1", intent="buy a cable", observation=OBS))
    sid = next(e.message.session_id for e in effects if isinstance(e, Reply))
    core.checklist_ready(
        sid, ParsedChecklist((ChecklistItem(1, "Search"),), "Checklist 1: Search"), "generated"
    )
    return sid


def score_job(core: SessionCore, sid: str, approval: str = "auto") -> RunScore:
    effects = core.score(
        OWNER,
        rq.Score(
            id="c1",
            session_id=sid,
            approval=approval,
            candidates=[{"action": "click('1')"}, {"action": "click('2')"}],
        ),
    )
    (job,) = [e for e in effects if isinstance(e, RunScore)]
    return job


def test_start_records_before_it_replies_and_asks_for_a_checklist():
    core = make_core()
    effects = core.start(
        OWNER, rq.SessionStart(id="s1", intent="buy", start_url="http://a/", observation=OBS)
    )
    assert kinds(effects) == [
        "record:session_started",
        "record:observation",
        "reply:session.started",
        "publish:session.started",
        "publish:observed",
        "RunChecklist",
    ]
    (run,) = [e for e in effects if isinstance(e, RunChecklist)]
    assert (run.start_url, run.axtree) == ("http://a/", OBS["axtree"])
    pub = next(e for e in effects if isinstance(e, Publish) and e.event.type == "session.started")
    assert pub.exclude == OWNER  # the owner got the reply instead


def test_the_scorer_is_recorded_with_the_start():
    """The engine's identity, given to the machine once, is a record of every start (before
    the client's checklist)."""
    core = make_core(scorer=Scorer("tiny", "transformers", {"prompt": "webprm"}))
    parsed = ParsedChecklist(items=(ChecklistItem(1, "find it"),), text="1. find it")
    effects = core.start(OWNER, rq.SessionStart(id="s1", intent="buy", checklist="x"), parsed)
    assert [e.op for e in effects if isinstance(e, Record)] == [
        "session_started",
        "scorer",
        "checklist",
    ]
    (rec,) = [e for e in effects if isinstance(e, ScorerRecord)]
    assert rec == ScorerRecord("sess1", "tiny", "transformers", {"prompt": "webprm"})
    bare = make_core().start(OWNER, rq.SessionStart(id="s2", intent="buy"))  # no scorer given
    assert "scorer" not in [e.op for e in bare if isinstance(e, Record)]


def test_a_client_checklist_is_recorded_with_the_start():
    core = make_core()
    parsed = ParsedChecklist(items=(ChecklistItem(1, "find it"),), text="1. find it")
    msg = rq.SessionStart(id="s1", intent="buy", checklist="1. find it")
    effects = core.start(OWNER, msg, parsed)
    assert not [e for e in effects if isinstance(e, RunChecklist)]  # no engine job
    records = [e.op for e in effects if isinstance(e, Record)]
    assert records == ["session_started", "checklist"]  # one transaction, in this order
    published = [e.event.type for e in effects if isinstance(e, Publish)]
    assert published == ["session.started", "checklist"]
    assert core.sessions["sess1"].checklist == parsed


def test_observe_counts_steps_and_strips_screenshot_data_from_events():
    core = make_core()
    sid = started(core)  # the start observation is step 0
    effects = core.observe(
        OWNER,
        rq.Observe(
            id="o1",
            session_id=sid,
            url="http://b/",
            axtree="x",
            screenshot={"mime": "image/png", "data": "aGk="},
        ),
    )
    assert kinds(effects) == ["record:observation", "reply:observed", "publish:observed"]
    assert effects[0].screenshot == b"hi" and effects[0].event is effects[2].event
    assert effects[1].message.step == 1
    assert (
        effects[2].event.screenshot.data is None and effects[2].event.screenshot.mime == "image/png"
    )


def test_bad_base64_screenshot_is_invalid():
    core = make_core()
    sid = started(core)
    with pytest.raises(ProtocolError, match=r"screenshot\.data"):
        core.observe(
            OWNER,
            rq.Observe(id="o1", session_id=sid, url="u", axtree="x", screenshot={"data": "***"}),
        )


def test_unknown_and_closed_sessions():
    core = make_core()
    with pytest.raises(UnknownSessionError):
        core.observe(OWNER, rq.Observe(id="o", session_id="nope", url="u", axtree="a"))
    sid = started(core)
    ended = core.end(OWNER, rq.SessionEnd(id="e", session_id=sid, outcome="success", answer="$4"))
    assert kinds(ended) == ["record:session_ended", "reply:session.ended", "publish:session.ended"]
    with pytest.raises(SessionClosedError):
        core.score(OWNER, rq.Score(id="c", session_id=sid, candidates=[{"action": "a"}]))
    assert core.get(sid, open_only=False).summary().state == "ended"


def test_score_needs_an_observation():
    core = make_core()
    effects = core.start(OWNER, rq.SessionStart(id="s1", intent="buy"))
    sid = effects[-2].event.session_id  # publish:session.started
    with pytest.raises(ProtocolError, match="no observation"):
        core.score(OWNER, rq.Score(id="c", session_id=sid, candidates=[{"action": "a"}]))
    inline = core.score(
        OWNER, rq.Score(id="c", session_id=sid, candidates=[{"action": "a"}], observation=OBS)
    )
    # no checklist yet: the engine is asked for one (again) before the score
    assert kinds(inline) == ["record:observation", "publish:observed", "RunChecklist", "RunScore"]
    assert inline[-1].input.samples == 3  # the default
    assert (inline[-1].owner, inline[-1].input.checklist) == (OWNER, None)
    assert inline[-2].owner == OWNER


def test_a_score_job_carries_the_known_checklist_and_the_owner():
    core = make_core()
    sid = started(core)
    effects = core.score(OWNER, rq.Score(id="c", session_id=sid, candidates=[{"action": "a"}]))
    assert kinds(effects) == ["RunScore"]  # no generation: the machine knows the checklist
    (job,) = effects
    assert job.owner == OWNER
    assert job.input.checklist == core.get(sid).checklist


def test_a_candidate_keeps_its_wire_type_from_the_request_to_the_record():
    """The judge reads the candidates the client sent, and the record and the scored event
    carry those same objects (no copy into another type and back)."""
    core = make_core()
    sid = started(core)
    msg = rq.Score(id="c", session_id=sid, candidates=[{"thought": "t", "action": "click('1')"}])
    (job,) = core.score(OWNER, msg)
    assert job.input.candidates == tuple(msg.candidates)
    assert all(a is b for a, b in zip(job.input.candidates, msg.candidates, strict=True))
    record, *rest = core.score_done(job, step_score(0.9), Timing())
    assert isinstance(record, ScoreRecord) and record.candidates[0] is msg.candidates[0]
    published = [e for e in rest if isinstance(e, Publish)]
    assert published[-1].event.candidates[0] is msg.candidates[0]


def test_auto_decision_when_the_policy_is_happy():
    core = make_core()
    sid = started(core)
    job = score_job(core, sid)
    effects = core.score_done(job, step_score(0.4, 0.8), Timing(queue_ms=1, model_ms=2))
    assert kinds(effects) == [
        "record:score",
        "record:score_decision",
        "reply:scored",
        "publish:scored",
    ]
    reply = effects[2].message
    assert (reply.best, reply.decision.status, reply.decision.action) == (1, "auto", "click('2')")
    assert effects[3].event.candidates[1].action == "click('2')"


def test_low_reward_asks_a_human_and_the_decision_releases_scored():
    core = make_core()
    sid = started(core)
    job = score_job(core, sid)
    effects = core.score_done(job, step_score(0.1, 0.2), Timing())
    assert kinds(effects) == [
        "record:score",
        "record:approval_requested",
        "publish:approval.request",
        "AwaitApproval",
    ]
    req = effects[2].event
    assert effects[2].to_approvers and req.reason == "below_threshold" and req.candidate_index == 1
    assert isinstance(effects[3], AwaitApproval) and effects[3].timeout_s == 7.0
    assert core.get(sid).summary().state == "waiting_approval"
    out = core.decide(
        MONITOR,
        "monitor:tui",
        rq.ApprovalDecide(id="d1", request_id=req.request_id, decision="edit", action="click('3')"),
    )
    assert kinds(out) == [
        "record:approval_decided",
        "publish:approval.resolved",
        "reply:approval.resolved",
        "ApprovalClosed",
        "record:score_decision",
        "reply:scored",
        "publish:scored",
    ]
    scored = out[5]
    assert scored.conn == OWNER and scored.message.id == "c1"
    d = scored.message.decision
    assert (d.status, d.action, d.by) == ("edited", "click('3')", "monitor:tui")
    assert out[2].conn == MONITOR and out[2].message.id == "d1"
    with pytest.raises(ProtocolError, match="first decision wins"):
        core.decide(
            OWNER,
            "agent:x",
            rq.ApprovalDecide(id="d2", request_id=req.request_id, decision="approve"),
        )
    assert core.get(sid).summary().state == "running"


def test_timeout_rejects_by_default():
    core = make_core()
    sid = started(core)
    effects = core.score_done(score_job(core, sid, approval="always"), step_score(0.9), Timing())
    rid = effects[2].event.request_id
    assert effects[2].event.reason == "always"
    out = core.expire(rid)
    scored = next(e for e in out if isinstance(e, Reply)).message
    assert (scored.decision.status, scored.decision.action) == ("timeout", None)
    assert any(isinstance(e, ApprovalClosed) for e in out)
    assert core.expire(rid) == []


def test_drop_from_the_executed_candidate_asks_a_human():
    core = make_core()
    sid = started(core)
    core.score_done(score_job(core, sid), step_score(0.95, 0.5), Timing())
    act = core.action(OWNER, rq.Action(id="x1", session_id=sid, action="click('1')", thought="t"))
    assert kinds(act) == ["record:action", "reply:action.recorded", "publish:action"]
    core.observe(OWNER, rq.Observe(id="o", session_id=sid, url="u", axtree="a"))
    effects = core.score_done(score_job(core, sid), step_score(0.6, 0.5), Timing())
    assert effects[2].event.reason == "reward_drop"
    assert core.get(sid).history[-1].action == "click('1')"


def test_never_skips_the_gate_even_without_rewards():
    core = make_core()
    sid = started(core)
    effects = core.score_done(
        score_job(core, sid, approval="never"), step_score(None, None), Timing()
    )
    reply = effects[2].message
    assert (
        reply.best is None and reply.decision.status == "auto" and reply.results[0].reward is None
    )


def test_executed_action_scored_by_an_earlier_request_of_the_step_keeps_its_reward():
    """Refinement scores drafts one request at a time; the kept one may be an earlier draft."""
    core = make_core()
    sid = started(core)
    core.score_done(score_job(core, sid), step_score(0.9, 0.2), Timing())
    refined = core.score(
        OWNER, rq.Score(id="c2", session_id=sid, approval="never", candidates=[{"action": "x()"}])
    )
    (job,) = [e for e in refined if isinstance(e, RunScore)]
    core.score_done(job, step_score(0.4), Timing())
    core.action(OWNER, rq.Action(id="x1", session_id=sid, action="click('1')"))
    assert core.get(sid).step_rewards[0] == 0.9
    assert core.get(sid).previous_reward(1) == 0.9


def test_the_latest_screenshot_goes_to_the_judge_and_the_reply_says_what_it_saw():
    from dataclasses import replace

    core = make_core()
    sid = started(core)  # the start observation has no screenshot
    assert score_job(core, sid).input.screenshot is None
    shot = {"mime": "image/png", "data": "aGk="}
    core.observe(
        OWNER, rq.Observe(id="o1", session_id=sid, url="http://b/", axtree="x", screenshot=shot)
    )
    job = score_job(core, sid)
    assert (job.input.screenshot, job.input.screenshot_mime) == (b"hi", "image/png")
    core.observe(OWNER, rq.Observe(id="o2", session_id=sid, url="http://c/", axtree="y"))
    assert score_job(core, sid).input.screenshot is None  # only the latest observation's counts
    scored = step_score(0.4, 0.8)
    seen = replace(
        scored, candidates=tuple(replace(c, judge_inputs="text+image") for c in scored.candidates)
    )
    reply = core.score_done(job, seen, Timing())[2].message
    assert [r.judge_inputs for r in reply.results] == ["text+image", "text+image"]
    job = score_job(core, sid)
    reply = core.score_done(job, step_score(0.4, 0.8), Timing())[2].message
    assert [r.judge_inputs for r in reply.results] == ["text", "text"]


def test_a_tree_expansion_judges_with_the_path_to_its_node():
    """A tree search runs click('1'), leaves it, runs its sibling click('2') and expands it:
    the judge's trajectory there is the path (click('2')), not every action recorded."""
    core = make_core()
    sid = started(core)

    def node(n: int, event: str, parent: int | None = None, action: str | None = None) -> None:
        depth = 0 if parent is None else 1
        core.tree_node(OWNER, rq.TreeNode(
            id=f"n{n}{event}", session_id=sid, node=n, parent=parent, depth=depth, action=action,
            thought=f"why {action}" if action else None, status="expanded", event=event,
            step=0 if parent is not None else None,
        ))  # fmt: skip

    node(0, "expanded")
    core.score_done(score_job(core, sid), step_score(0.9, 0.5), Timing())
    node(1, "scored", 0, "click('1')")
    node(2, "scored", 0, "click('2')")
    for n, action in ((1, "click('1')"), (2, "click('2')")):
        core.action(OWNER, rq.Action(id=f"a{n}", session_id=sid, action=action, step=0))
        core.observe(OWNER, rq.Observe(id=f"o{n}", session_id=sid, url=f"http://{n}/", axtree="x"))
        node(n, "expanded", 0, action)
        assert score_job(core, sid).input.history == (Turn(f"why {action}", action),)
    assert [t.action for t in core.get(sid).history] == ["click('2')"]
