"""Guards over real sockets: an action that commits is held for a person whatever its reward
and whatever the score's approval mode; with nobody paired to decide it is refused at once,
and the SDK says so; the hold's reason and hits are in the recording. The judge is scripted
(the held candidate's reward is 0.95, far above the approval threshold): these tests are
about the guard, not about judgements."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from pathlib import Path

import pytest
from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.recorder import History
from webshepherd.daemon.sessions.guards import GuardPolicy
from webshepherd.protocol.client import AsyncClient

from tests.fixtures.daemon import REFERENCE, TEST_TOKEN, DaemonHandle, make_config
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon

URL = "http://shop.local/checkout"
OBS = {
    "url": URL,
    "axtree": "\n".join(
        [
            "RootWebArea 'Checkout', focused",
            "\t[3] textbox 'Name'",
            "\t[4] button 'Continue'",
            "\t[5] link 'Help'",
        ]
    ),
    "elements": {
        "3": {"tag": "input", "submits": True, "form_method": "POST",
              "form_action": "http://shop.local/order"},
        "4": {"tag": "button", "submits": True, "form_method": "POST",
              "form_action": "http://shop.local/order"},
        "5": {"tag": "a", "href": "http://shop.local/help"},
    },
}  # fmt: skip
SUBMIT = ("Continue to pay.", "click('4')")
HELP = ("Read the help.", "click('5')")
JUDGE = {(URL, SUBMIT[1]): (0.95, (2, 1), "submits"), (URL, HELP[1]): (0.2, (0, 0), "help")}


async def _session(client: AsyncClient):  # type: ignore[no-untyped-def]
    return await client.start_session(
        "Buy a cable", start_url="http://shop.local/", observation=OBS, checklist=REFERENCE
    )


@pytest.mark.parametrize("approval", ["auto", "never"])
async def test_a_post_submit_at_high_reward_waits_for_the_person(
    tmp_path: Path, approval: str
) -> None:
    async with scripted_daemon(tmp_path, ScriptedJudge(JUDGE)) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        monitor = await d.client(role="monitor", name="tui")
        async with AsyncClient(d.url, TEST_TOKEN) as agent:
            session = await _session(agent)
            scoring = asyncio.create_task(
                session.score([SUBMIT, HELP], samples=1, approval=approval, timeout=30)
            )
            req = await monitor.wait_for("approval.request", timeout=30)
            assert req["reason"] == "guarded" and req["reward"] == 0.95
            assert req["candidate"]["action"] == SUBMIT[1]
            assert req["guard"] == [
                {
                    "rule": "form_submit",
                    "detail": "element 4 (button 'Continue') submits a POST form to "
                    "http://shop.local/order",
                }
            ]
            assert not scoring.done()
            await monitor.request(
                {"type": "approval.decide", "request_id": req["request_id"], "decision": "approve"}
            )
            scored = await scoring
            assert scored.decision.status == "approved"
            assert scored.decision.action == SUBMIT[1]
            assert [h.rule for h in scored.decision.guard] == ["form_submit"]
            assert (scored.decision.decider, scored.decision.by) == ("person", "monitor:tui")
            assert [(p.index, [h.rule for h in p.hits]) for p in scored.predicted or []] == [
                (0, ["form_submit"])
            ]
            assert req["card"]["headline"] == (
                "Waiting for you: this submits a POST form to shop.local/order"
            )
        await d.close_clients()
    tl = History.open(tmp_path / "data" / DB_NAME).timeline(session.session_id)
    assert tl is not None
    (approval_row,) = [a for s in tl.steps for a in s.approvals]
    assert approval_row.reason == "guarded" and approval_row.decision == "approve"
    assert [(h.rule, h.detail) for h in approval_row.guard] == [
        (h["rule"], h["detail"]) for h in req["guard"]
    ]


async def test_with_nobody_paired_a_guarded_step_is_refused_at_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with scripted_daemon(tmp_path, ScriptedJudge(JUDGE)) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        # an extension that only declares its role is no person: it decides nothing
        watcher = await d.client(role="extension", name="launched", paired=False)
        async with AsyncClient(d.url, TEST_TOKEN) as agent:
            session = await _session(agent)
            with caplog.at_level(logging.WARNING, logger="webshepherd"):
                scored = await session.score([SUBMIT, HELP], samples=1, timeout=30)
            d_ = scored.decision
            assert (d_.status, d_.action, d_.by, d_.index) == ("rejected", None, "daemon", 0)
            assert [h.rule for h in d_.guard] == ["form_submit"]
            assert d_.note is not None and d_.note.startswith("guarded (form_submit): element 4")
            assert "no person is connected to decide" in d_.note
            assert (d_.decider, d_.mode) == ("guard", "ask")  # the guard, not a person
            assert d_.way_out is not None and "`serve --no-guard form_submit`" in d_.way_out
            assert "--sandbox-origin http://shop.local" in d_.way_out
            assert "webshepherd pair tui" in d_.way_out
            assert len(server.core.approvals) == 0  # nothing left open
            # an unguarded step with the same mode goes through as before
            auto = await session.score([HELP], samples=1, timeout=30)
            assert auto.decision.status == "auto" and auto.decision.guard == []
        line = next(r.getMessage() for r in caplog.records if "refused" in r.getMessage())
        assert "the daemon refused the action of step 1: guarded (form_submit)" in line
        assert "do not run it" in line and "decided by: guard" in line
        assert d_.way_out in line
        assert watcher  # connected throughout
        await d.close_clients()
    tl = History.open(tmp_path / "data" / DB_NAME).timeline(session.session_id)
    assert tl is not None
    (row,) = [a for s in tl.steps for a in s.approvals]
    assert (row.reason, row.decision, row.status, row.decided_by) == (
        "guarded",
        "reject",
        "rejected",
        "daemon",
    )
    assert [h.rule for h in row.guard] == ["form_submit"] and row.note == d_.note


async def test_a_person_may_decide_and_the_daemon_may_be_told_no_guards(tmp_path: Path) -> None:
    from webshepherd.daemon.build import running_daemon

    from tests.fixtures.daemon import make_settings

    settings = make_settings(tmp_path, guards=GuardPolicy(rules=frozenset()))
    async with contextlib.AsyncExitStack() as stack:
        server = await stack.enter_async_context(running_daemon(settings, ScriptedJudge(JUDGE)))
        async with AsyncClient(server.url, TEST_TOKEN) as agent:
            session = await _session(agent)
            scored = await session.score([SUBMIT, HELP], samples=1, timeout=30)
            assert scored.decision.status == "auto" and scored.decision.action == SUBMIT[1]


async def test_old_recordings_without_the_guards_table_still_read(tmp_path: Path) -> None:
    async with contextlib.AsyncExitStack() as stack:
        server = await stack.enter_async_context(scripted_daemon(tmp_path, ScriptedJudge(JUDGE)))
        agent = await stack.enter_async_context(AsyncClient(server.url, TEST_TOKEN))
        session = await _session(agent)
        await session.score([SUBMIT], samples=1, timeout=30)
    db = sqlite3.connect(tmp_path / "data" / DB_NAME)
    db.execute("DROP TABLE approval_guards")
    db.commit()
    db.close()
    tl = History.open(tmp_path / "data" / DB_NAME).timeline(session.session_id)
    assert tl is not None
    (row,) = [a for s in tl.steps for a in s.approvals]
    assert row.reason == "guarded" and row.guard == []
