"""The scheduler's cross-session batching on a real event loop and worker thread, with a
recording batch runner: fairness, the batch bound, opaque jobs, overload, cancel, errors;
then three sessions through a real daemon and the tiny model."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from webshepherd.daemon.server.scheduler import Scheduler
from webshepherd.protocol.errors import ModelError, OverloadedError

from tests.daemon.server.test_backpressure import until
from tests.fixtures.daemon import CANDS, start_session


class Recorder:
    """A batch runner: records each call's items (``(session, n)``) and which cancels were set
    (optionally waiting on ``gate`` first); an item ``(…, "fail")`` returns an error."""

    def __init__(self) -> None:
        self.calls: list[list[Any]] = []
        self.cancelled: list[list[bool]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    def __call__(self, items: Sequence[Any], cancels: Sequence[threading.Event]) -> list[Any]:
        self.entered.set()
        while not self.gate.wait(0.01):
            pass
        self.calls.append(list(items))
        self.cancelled.append([c.is_set() for c in cancels])
        return [ModelError(f"{it} failed") if it[-1] == "fail" else ("done", it) for it in items]


async def started(batch_sessions: int = 8, queue_limit: int = 100) -> Scheduler:
    sched = Scheduler(queue_limit=queue_limit, timeout_s=30, batch_sessions=batch_sessions)
    sched.start()
    return sched


async def hold(sched: Scheduler) -> tuple[threading.Event, asyncio.Task[Any]]:
    """An opaque job that keeps the worker busy until the returned event is set."""
    release = threading.Event()
    entered = threading.Event()

    def block(_cancel: threading.Event) -> str:
        entered.set()
        release.wait(10)
        return "held"

    task = asyncio.create_task(sched.run("holder", None, block))
    await until(entered.is_set)
    return release, task


def submit(sched: Scheduler, runner: Recorder, sid: str, n: int, conn: int | None = None, *tail):
    return asyncio.create_task(sched.run_batched(sid, conn, (sid, n, *tail), runner))


async def test_a_busy_session_never_holds_back_another() -> None:
    sched, rec = await started(), Recorder()
    release, held = await hold(sched)
    a_jobs = [submit(sched, rec, "A", i) for i in range(10)]
    await until(lambda: sched.depth == 10)
    b_job = submit(sched, rec, "B", 0)
    await until(lambda: sched.depth == 11)
    release.set()
    results = await asyncio.gather(held, *a_jobs, b_job)
    assert [f.value for f in results[1:-1]] == [("done", ("A", i)) for i in range(10)]
    assert results[-1].value == ("done", ("B", 0))
    assert rec.calls[0] == [("A", 0), ("B", 0)]  # B's one job shares A's first round
    assert [len(c) for c in rec.calls] == [2] + [1] * 9
    for call in rec.calls:  # at most one job per session per call
        assert len({sid for sid, *_ in call}) == len(call)
    assert [it for call in rec.calls for it in call if it[0] == "A"] == [
        ("A", i) for i in range(10)
    ]
    st = sched.batch_stats
    assert (st.batched_calls, st.batched_jobs, st.largest) == (1, 2, 2)
    for f in results[1:]:
        assert f.queue_ms >= 0 and f.run_ms >= 0
    await sched.stop()


async def test_requests_sent_together_to_an_idle_worker_share_a_call() -> None:
    sched, rec = await started(), Recorder()
    sched.gather_s = 0.5  # generous: the two later requests come a few loop turns after
    first = submit(sched, rec, "s0", 0)  # the worker is idle: it wakes up for this one
    for _ in range(3):
        await asyncio.sleep(0)
    await asyncio.gather(first, submit(sched, rec, "s1", 0), submit(sched, rec, "s2", 0))
    assert rec.calls == [[("s0", 0), ("s1", 0), ("s2", 0)]]
    await sched.stop()


@pytest.mark.parametrize("bound", [1, 3])
async def test_batch_sessions_bounds_a_call(bound: int) -> None:
    sched, rec = await started(batch_sessions=bound), Recorder()
    release, held = await hold(sched)
    jobs = [submit(sched, rec, f"s{i}", 0) for i in range(5)]
    await until(lambda: sched.depth == 5)
    release.set()
    await asyncio.gather(held, *jobs)
    sizes = [len(c) for c in rec.calls]
    assert sizes == ([1] * 5 if bound == 1 else [3, 2])
    assert [it[0] for c in rec.calls for it in c] == [f"s{i}" for i in range(5)]  # in turn
    await sched.stop()


async def test_an_opaque_job_runs_alone_and_keeps_its_turn() -> None:
    sched, rec = await started(), Recorder()
    release, held = await hold(sched)
    order: list[str] = []
    a = submit(sched, rec, "A", 0)
    opaque = asyncio.create_task(sched.run("C", None, lambda _c: order.append("C") or "c"))
    b = submit(sched, rec, "B", 0)
    other = Recorder()  # another runner does not join this one's calls
    d = submit(sched, other, "D", 0)
    await until(lambda: sched.depth == 4)
    release.set()
    await asyncio.gather(held, a, opaque, b, d)
    assert rec.calls == [[("A", 0), ("B", 0)]]
    assert other.calls == [[("D", 0)]]
    assert order == ["C"]
    await sched.stop()


async def test_overloaded_past_the_queue_bound() -> None:
    sched, rec = await started(queue_limit=3), Recorder()
    release, held = await hold(sched)
    jobs = [submit(sched, rec, f"s{i}", 0) for i in range(3)]
    await until(lambda: sched.depth == 3)
    with pytest.raises(OverloadedError):
        await sched.run_batched("s9", None, ("s9", 0), rec)
    release.set()
    await asyncio.gather(held, *jobs)
    assert len(rec.calls) == 1 and len(rec.calls[0]) == 3
    await sched.stop()


async def test_a_disconnect_cancels_only_its_own_jobs_in_a_batch() -> None:
    sched, rec = await started(), Recorder()
    release, held = await hold(sched)
    mine = submit(sched, rec, "A", 0, 1)
    queued_mine = submit(sched, rec, "A", 1, 1)
    theirs = submit(sched, rec, "B", 0, 2)
    await until(lambda: sched.depth == 3)
    rec.gate.clear()
    release.set()
    await held
    await until(rec.entered.is_set)  # A0 and B0 are running together; A1 waits
    assert sched.in_flight == 2 and sched.depth == 1
    assert sched.cancel_connection(1) == 2  # A1 dropped, A0 signalled
    rec.gate.set()
    assert (await theirs).value == ("done", ("B", 0))
    assert rec.calls == [[("A", 0), ("B", 0)]]
    assert rec.cancelled == [[True, False]]  # only A0's cancel event was set
    with pytest.raises(asyncio.CancelledError):
        await queued_mine
    mine.cancel()
    await sched.stop()


async def test_one_member_failing_fails_only_that_member() -> None:
    sched, rec = await started(), Recorder()
    release, held = await hold(sched)
    ok = submit(sched, rec, "A", 0)
    bad = submit(sched, rec, "B", 0, None, "fail")
    await until(lambda: sched.depth == 2)
    release.set()
    assert (await ok).value == ("done", ("A", 0))
    with pytest.raises(ModelError, match="failed"):
        await bad
    assert len(rec.calls) == 1  # they did share the call

    def broken(items: Sequence[Any], cancels: Sequence[threading.Event]) -> list[Any]:
        raise RuntimeError("the whole call failed")

    jobs = [asyncio.create_task(sched.run_batched(s, None, s, broken)) for s in ("A", "B")]
    for j in jobs:  # a runner that raises: every member gets its error
        with pytest.raises(RuntimeError, match="whole call"):
            await j
    assert (await held).value == "held"
    await sched.stop()


# -- through a real daemon with the tiny model ----------------------------------------------


async def test_the_batch_knob_reaches_the_scheduler(start_daemon) -> None:
    from webshepherd.daemon.cli import build_parser
    from webshepherd.daemon.cli.serve import config_from_args

    assert config_from_args(build_parser().parse_args(["serve"])).batch_sessions == 8
    args = build_parser().parse_args(["serve", "--batch-sessions", "1"])
    assert config_from_args(args).batch_sessions == 1
    daemon = await start_daemon(batch_sessions=1)
    assert daemon.server.scheduler.batch_sessions == 1


async def test_three_sessions_scored_in_one_call_get_their_own_replies(start_daemon) -> None:
    daemon = await start_daemon(batch_sessions=8)
    clients = [await daemon.client(name=f"agent{i}") for i in range(3)]
    sids = [await start_session(c) for c in clients]
    for c in clients:
        await c.wait_for("checklist")
    cands = [CANDS, CANDS[1:], [*CANDS, {"thought": "Go back.", "action": "go_back()"}]]

    def score(i: int) -> dict[str, Any]:
        return {
            "type": "score",
            "id": f"s{i}",
            "session_id": sids[i],
            "candidates": cands[i],
            "samples": 1,
            "approval": "never",
        }

    sched = daemon.server.scheduler
    assert sched is not None
    release, held = await hold(sched)  # the three requests queue up behind a busy worker
    for i, c in enumerate(clients):
        await c.send(score(i))
    await until(lambda: sched.depth == 3)
    release.set()
    await held
    together = [
        await c.wait_for(lambda m, i=i: m.get("id") == f"s{i}", 60) for i, c in enumerate(clients)
    ]
    assert sched.batch_stats.largest == 3 and sched.batch_stats.batched_calls == 1
    for i, reply in enumerate(together):
        assert reply["type"] == "scored", reply
        assert reply["session_id"] == sids[i]
        assert len(reply["results"]) == len(cands[i])
    # the same requests one at a time (greedy): the same rewards as in the shared call
    for i, c in enumerate(clients):
        alone = await c.request(score(i), timeout=60)
        assert alone["type"] == "scored", alone
        assert [r["reward"] for r in alone["results"]] == pytest.approx(
            [r["reward"] for r in together[i]["results"]], abs=1e-6
        )
    assert sched.batch_stats.batched_calls == 1


async def test_a_cancelled_stop_is_not_swallowed() -> None:
    """``stop`` reaps the loop task it cancelled; a cancellation of stop's own caller (the
    daemon stopping, a timeout) propagates instead of being swallowed with the loop's."""
    sched = await started()
    await asyncio.sleep(0)  # the loop waits for work
    stopping = asyncio.create_task(sched.stop())
    await asyncio.sleep(0)  # stop() waits for the loop task it cancelled
    stopping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopping
    assert stopping.cancelled()
    await sched.stop()  # stopped for good: the loop reaped, the worker thread shut down
