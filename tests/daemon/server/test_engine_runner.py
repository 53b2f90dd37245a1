"""The engine runner keeps a session in memory from its job's start until the result is
recorded: idle eviction never takes a session whose score or checklist is on its way back.
A step asked for before its session's checklist exists waits in the session and runs with the
generated one, and the engine reads the candidates the client sent; one whose connection left
meanwhile is never scored."""

from __future__ import annotations

import threading
from collections.abc import Callable

from webshepherd.daemon.engine.engine import Engine
from webshepherd.daemon.engine.types import StepInput
from webshepherd.daemon.sessions import Effect
from webshepherd.daemon.sessions.checklists import NO_CHECKLIST
from webshepherd.protocol.common import Candidate

from tests.fixtures.daemon import CANDS, OBS, REFERENCE, engine_like, start_session
from tests.fixtures.poll import until


async def test_a_session_is_not_evicted_between_its_score_and_the_record(start_daemon):
    daemon = await start_daemon(idle_evict_s=0.2)
    runner, core = daemon.server._runner(), daemon.server.core
    record, idle = runner._step, core.idle
    watched: list[str] = []
    sweeps_past_idle = 0  # evict sweeps that found the watched session idle long enough
    kept_while_waiting: list[tuple[bool, bool]] = []

    def counting_idle(idle_s: float, busy):  # type: ignore[no-untyped-def]
        nonlocal sweeps_past_idle
        st = core.sessions.get(watched[0]) if watched else None
        if st is not None and core.monotonic() - st.last_active >= idle_s:
            sweeps_past_idle += 1
        return idle(idle_s, busy)

    async def slow_record(sid: str | None, apply: Callable[[], list[Effect]]) -> None:
        # the job is done (the scheduler no longer lists it); the evict loop runs meanwhile
        if sid is not None and not watched:
            watched.append(sid)
            await until(lambda: sweeps_past_idle >= 2, what="two evict sweeps past the idle time")
            kept_while_waiting.append((sid in runner.engaged(), sid in core.sessions))
        await record(sid, apply)

    core.idle = counting_idle
    runner._step = slow_record
    agent = await daemon.client()
    sid = await start_session(agent)
    assert (await agent.request({"type": "observe", "session_id": sid, **OBS}))["step"] == 1
    scored = await agent.request(
        {"type": "score", "session_id": sid, "candidates": CANDS, "samples": 1,
         "approval": "never"},
        timeout=60,
    )  # fmt: skip
    assert scored["type"] == "scored" and scored["step"] == 1, scored
    assert kept_while_waiting == [(True, True)]


class HeldChecklist(Engine):
    """The real engine whose checklist generation waits for ``release`` (then writes the
    reference checklist) and that keeps every step it scores."""

    release: threading.Event
    steps: list[StepInput]

    def make_checklist(self, *a, **kw):
        assert self.release.wait(30)
        return self.parse_reference_checklist(REFERENCE)

    def score(self, step, on_progress=None, cancel=None):
        self.steps.append(step)
        return super().score(step, on_progress, cancel)


async def test_a_step_asked_before_the_checklist_runs_with_the_generated_one(
    start_daemon, daemon_engine
):
    engine = engine_like(HeldChecklist, daemon_engine)
    engine.release, engine.steps = threading.Event(), []
    daemon = await start_daemon(engine=engine)
    runner = daemon.server._runner()
    agent = await daemon.client()
    started = await agent.request({"type": "session.start", "intent": "Buy", "observation": OBS})
    sid = started["session_id"]
    score = {"type": "score", "id": "q", "session_id": sid, "candidates": CANDS, "samples": 1,
             "approval": "never"}  # fmt: skip
    await agent.send(score)
    # waiting in the session for the generation, which has not finished
    core = daemon.server.core
    await until(lambda: len(core.get(sid).awaiting_checklist) == 1, what="the score to wait")
    assert core.get(sid).checklist is None and runner.scheduler.depth == 0
    engine.release.set()
    scored = await agent.wait_for(lambda m: m.get("id") == "q", timeout=60)
    assert scored["type"] == "scored", scored
    (step,) = engine.steps
    assert step.checklist == engine.parse_reference_checklist(REFERENCE)
    assert all(isinstance(c, Candidate) for c in step.candidates)
    assert [(c.thought, c.action) for c in step.candidates] == [
        (c["thought"], c["action"]) for c in CANDS
    ]


async def test_a_step_whose_connection_left_while_it_waited_is_never_scored(
    start_daemon, daemon_engine, caplog
):
    caplog.set_level("DEBUG", logger="webshepherd.daemon.server.engine_runner")
    engine = engine_like(HeldChecklist, daemon_engine)
    engine.release, engine.steps = threading.Event(), []
    daemon = await start_daemon(engine=engine)
    core = daemon.server.core
    agent = await daemon.client()
    started = await agent.request({"type": "session.start", "intent": "Buy", "observation": OBS})
    sid = started["session_id"]
    await agent.send({"type": "score", "id": "q", "session_id": sid, "candidates": CANDS,
                      "samples": 1, "approval": "never"})  # fmt: skip
    await until(lambda: len(core.get(sid).awaiting_checklist) == 1, what="the score to wait")
    await agent.close()
    engine.release.set()
    await until(
        lambda: any("score q dropped" in r.getMessage() for r in caplog.records),
        what="the waiting score to be dropped",
    )
    assert core.get(sid).checklist is not None and core.get(sid).awaiting_checklist == []
    assert engine.steps == []


class UnparseableBackend:
    """The real backend, except that what it generates is no checklist (a judge that answers
    the checklist prompt with prose), counted."""

    def __init__(self, real: object) -> None:
        self.real, self.generations = real, 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    def generate(self, *a: object, **kw: object) -> str:
        self.generations += 1
        return "Sure! I would click the button and then check the page."


async def test_a_checklist_that_does_not_parse_gives_reward_none_and_a_reason(
    start_daemon, daemon_engine, caplog
):
    """Every candidate's reward is None with the reason (a result, not an error); the daemon
    logs it once a session; each later step asks the judge again, once ahead of it."""
    backend = UnparseableBackend(daemon_engine.backend)
    daemon = await start_daemon(engine=Engine(backend, daemon_engine.config))  # type: ignore[arg-type]
    agent = await daemon.client()
    sid = await start_session(agent, checklist=None)
    err = await agent.wait_for("error", timeout=60)  # the start's generation, told its owner
    assert err["code"] == "model_error" and "could not be parsed" in err["message"]
    assert backend.generations == 1
    for step in (1, 2):
        scored = await agent.request(
            {"type": "score", "session_id": sid, "candidates": CANDS, "samples": 1,
             "approval": "never"},
            timeout=60,
        )  # fmt: skip
        assert scored["type"] == "scored", scored
        assert [r["reward"] for r in scored["results"]] == [None] * len(CANDS)
        for r in scored["results"]:
            assert r["feedback"].startswith(NO_CHECKLIST + ": the model's checklist could not")
        assert backend.generations == 1 + step  # once ahead of each step, never twice
    logged = [r for r in caplog.records if r.getMessage().startswith(f"session {sid} has no ")]
    assert len(logged) == 1 and "could not be parsed" in logged[0].getMessage()
    assert daemon.server.core.get(sid).checklist is None
