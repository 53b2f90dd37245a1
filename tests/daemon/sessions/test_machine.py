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
from webshepherd.daemon.records.scores import ScoreRecord
from webshepherd.daemon.records.sessions import ScorerRecord
from webshepherd.daemon.records.stored import StoredSession
from webshepherd.daemon.sessions import (
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
from webshepherd.protocol.common import AgentInfo, SessionHeader, Timing, Turn
from webshepherd.protocol.errors import (
    ProtocolError,
    SessionClosedError,
    UnknownSessionError,
)

OWNER, MONITOR = 1, 2
OBS = {"url": "http://shop.local/", "axtree": "RootWebArea 'Shop'"}


def make_core(**kw) -> SessionCore:
    """A machine told that the owner's agent connection and a paired person's monitor are open."""
    ids = itertools.count(1)
    clock = itertools.count(1000)
    core = SessionCore(
        ApprovalPolicy(0.3, 0.3),
        default_samples=3,
        approval_timeout_s=7.0,
        clock=lambda: float(next(clock)),
        new_id=lambda: f"sess{next(ids)}",
        **kw,
    )
    core.connections.opened(OWNER, person=False)
    core.connections.opened(MONITOR, person=True)
    return core


POST = {"method": "POST", "url": "http://shop.local/orders", "kind": "write"}


def commit_check(core: SessionCore, sid: str, conn: int = OWNER, approver: str | None = None):
    msg = rq.CommitCheck(id="q1", session_id=sid, request=POST)
    return core.commit_check(conn, msg, approver=approver)


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
    core.checklist_ready(sid, ParsedChecklist((ChecklistItem(1, "Search"),), "Checklist 1: Search"))
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
    assert core.get(sid, open_only=False).summary().mode is None  # not live
    with pytest.raises(SessionClosedError):
        commit_check(core, sid)
    with pytest.raises(SessionClosedError):
        core.set_mode(MONITOR, "tui", rq.SessionMode(id="v", session_id=sid, mode="stop"))
    with pytest.raises(UnknownSessionError):
        commit_check(core, "nope")


def test_score_needs_an_observation():
    core = make_core()
    effects = core.start(OWNER, rq.SessionStart(id="s1", intent="buy"))
    sid = effects[-2].event.session_id  # publish:session.started
    with pytest.raises(ProtocolError, match="no observation"):
        core.score(OWNER, rq.Score(id="c", session_id=sid, candidates=[{"action": "a"}]))
    inline = core.score(
        OWNER, rq.Score(id="c", session_id=sid, candidates=[{"action": "a"}], observation=OBS)
    )
    # no checklist yet, its generation asked at the start: the score waits for it
    assert kinds(inline) == ["record:observation", "publish:observed"]
    (job,) = core.get(sid).awaiting_checklist
    assert job.input.samples == 3  # the default
    assert (job.owner, job.input.checklist) == (OWNER, None)


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


# -- who may address a session, restore, ownership, activity (issue 43: the machine's) -------


def stored(sid: str = "old1", *, ended: bool = False) -> StoredSession:
    header = SessionHeader(
        session_id=sid, intent="buy a cable", start_url="http://shop.local/", agent=AgentInfo(),
        source="agent", created_at=5.0, latest_reward=0.4,
        outcome="success" if ended else None, ended_at=9.0 if ended else None,
    )  # fmt: skip
    return StoredSession(
        header, None, None, (2, "http://shop.local/p", "RootWebArea 'P'"), (), (), mode="watch"
    )


def test_check_live_names_unknown_and_ended_sessions():
    core = make_core()
    sid = started(core)
    core.check_live(sid)
    with pytest.raises(UnknownSessionError, match="no session 'nope'"):
        core.check_live("nope")
    core.end(OWNER, rq.SessionEnd(id="e", session_id=sid))
    with pytest.raises(SessionClosedError, match=f"session {sid!r} has ended"):
        core.check_live(sid)


def test_a_recorded_session_is_adopted_with_its_holder_and_its_cut_off_checklist_asked_again():
    core = make_core()
    effects = core.adopt(stored(), [("observed", "http://shop.local/p", "RootWebArea 'P'", 2)], 7)
    assert kinds(effects) == ["RunChecklist"] and effects[0].owner == 7
    summary = core.summary("old1")
    assert summary is not None and summary.mode == "watch" and core.owner_of("old1") == 7
    assert core.adopt(stored(), [], 8) == [] and core.owner_of("old1") == 7  # once
    assert core.adopt(stored("old2", ended=True), [], 7) == []  # an ended one: no generation
    with pytest.raises(SessionClosedError):
        core.check_live("old2")


def test_idle_sessions_count_from_their_last_step_on_the_machines_clock():
    now = [100.0]
    core = make_core(monotonic=lambda: now[0])
    a, b = started(core), started(core)
    now[0] = 130.0
    core.touch(b)
    now[0] = 160.0
    assert core.idle(60.0, busy=set()) == [a]
    assert core.idle(60.0, busy={a}) == []
    assert sorted(core.idle(30.0, busy=set())) == sorted([a, b])
