"""The TUI against a real daemon (tiny real model) and a scripted agent, driven by Pilot."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Input
from webshepherd.tui.app import WebShepherdApp
from webshepherd.tui.screens.history import HistoryScreen
from webshepherd.tui.screens.replay import ReplayScreen
from webshepherd.tui.widgets.approvals_table import ApprovalsPanel
from webshepherd.tui.widgets.reward_plot import RewardPlot
from webshepherd.tui.widgets.session_detail import SessionDetail
from webshepherd.tui.widgets.sessions_table import SessionsTable

from tests.daemon.server.test_session_flow import CANDS, OBS, start_session
from tests.fixtures.daemon import TEST_TOKEN
from tests.tui.helpers import FixedProbe, screen_text, wait_for_text, wait_until

pytestmark = pytest.mark.model


def tui(url: str, approver: str | None = None) -> WebShepherdApp:
    return WebShepherdApp(
        url, TEST_TOKEN, probe=FixedProbe(), refresh_s=0.1, backoff_max_s=0.5, approver=approver
    )


async def step(agent, sid: str, n: int, approval: str = "never") -> dict:
    await agent.request(
        {
            "type": "observe",
            "session_id": sid,
            "url": f"http://shop.local/p{n}",
            "axtree": OBS["axtree"],
        }
    )
    scored = await agent.request(
        {
            "type": "score",
            "session_id": sid,
            "candidates": CANDS,
            "samples": 1,
            "approval": approval,
        },
        timeout=60,
    )
    assert scored["type"] == "scored", scored
    await agent.request({"type": "action", "session_id": sid, "action": CANDS[0]["action"]})
    return scored


async def test_sessions_appear_and_the_curve_grows(daemon):
    agent = await daemon.client(name="agent-1")
    early = await start_session(agent, agent={"name": "early-bird"})
    await step(agent, early, 1)  # before the TUI connects: it arrives by catch-up
    app = tui(daemon.url)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.link.catch_ups >= 1, what="the first catch-up")
        table = app.screen.query_one(SessionsTable)
        await wait_until(pilot, lambda: table.row_count == 1, what="the early session's row")
        assert app.state.sessions[early].agent == "early-bird"
        assert len(app.state.sessions[early].scored_steps) == 1
        sid = await start_session(agent, agent={"name": "live-agent"})
        await wait_until(pilot, lambda: table.row_count == 2, what="the live session's row")
        assert str(table.get_row_at(0)[0]) == "live-agent"  # newest first (plain Text)
        assert table.selected == early  # the selection stays put when rows arrive
        await pilot.press("up")
        assert table.selected == sid
        plot = app.screen.query_one(RewardPlot)
        for n in (1, 2, 3):
            await step(agent, sid, n)
            await wait_until(pilot, lambda n=n: len(plot.points[0]) == n, what=f"point {n}")
        # indices 1-3 (the start page, index 0, was not scored), read as steps 2-4 (steps.py)
        assert [s for s, _ in plot.points[0]] == [2, 3, 4]
        view = app.state.sessions[sid]
        assert view.checklist and [i for i, _ in view.checklist] == [1, 2]
        await wait_until(pilot, lambda: table.get_cell(sid, "steps") == "3", what="steps cell")
        detail = app.screen.query_one(SessionDetail)
        assert detail.view is view
        await wait_for_text(pilot, app, "Search for cables", "live-agent")
        await agent.request({"type": "session.end", "session_id": sid, "outcome": "success"})
        await wait_until(pilot, lambda: view.state == "ended", what="the end")
        await wait_until(
            pilot,
            lambda: "ended: success" in str(table.get_cell(sid, "state")),
            what="the state cell",
        )

        # history (sessions.list) -> replay (session.get), stepping with the keys
        await pilot.press("h")
        history = app.screen
        assert isinstance(history, HistoryScreen)
        rows = history.query_one(DataTable)
        await wait_until(pilot, lambda: rows.row_count == 2, what="the history list")
        assert [s.session_id for s in history.summaries] == [sid, early]
        await pilot.press("enter")  # the newest: the live session, 3 steps
        await wait_until(pilot, lambda: isinstance(app.screen, ReplayScreen), what="replay")
        replay = app.screen
        assert isinstance(replay, ReplayScreen)
        await wait_until(pilot, lambda: replay.view is not None, what="the recorded history")

        def shown() -> int:
            assert replay.view is not None and replay.view.current is not None
            return replay.view.current.step

        assert shown() == 1 and len(replay.ends) == 3
        await pilot.press("right", "right", "right")
        assert shown() == 3 and replay.view is not None and replay.view.state == "ended"
        await pilot.press("left")
        assert shown() == 2
        assert [p for p, _ in replay.query_one(RewardPlot).points[0]] == [2, 3]  # as read
        await pilot.press("home")  # first: before the scrollable detail takes it (tui/keys.py)
        assert shown() == 1
        await pilot.press("escape", "escape")
        assert app.screen is app.main
        await pilot.press("o")  # replay the selected session straight from the list
        await wait_until(pilot, lambda: isinstance(app.screen, ReplayScreen), what="o replay")


async def test_approval_keys_resolve_real_requests(daemon):
    agent = await daemon.client(name="agent-1")
    other = await daemon.client(role="extension", name="ext")
    sid = await start_session(agent)
    app = tui(daemon.url, await daemon.approver("monitor", "webshepherd-tui"))  # paired
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.link.catch_ups >= 1, what="connected")
        assert app.link.paired
        panel = app.screen.query_one(ApprovalsPanel)
        await pilot.press("2")
        scored_by_key = {}
        for n, keys, status in (
            (1, ["a"], "approved"),
            (2, ["r"], "rejected"),
            (3, ["e", "ctrl+u", *"click('99')", "enter"], "edited"),
        ):
            await agent.send(
                {
                    "type": "score",
                    "id": f"c{n}",
                    "session_id": sid,
                    "candidates": CANDS,
                    "samples": 1,
                    "approval": "always",
                }
            )
            await wait_until(pilot, lambda: panel.table.row_count == 1, what=f"request {n}")
            assert app.state.sessions[sid].state == "waiting_approval"
            for key in keys:
                await pilot.press(key)
                if key == "e":
                    await wait_until(pilot, lambda: isinstance(app.focused, Input), what="input")
            scored = await agent.wait_for(lambda m, n=n: m.get("id") == f"c{n}", timeout=30)
            scored_by_key[status] = scored["decision"]
            await wait_until(pilot, lambda: panel.table.row_count == 0, what="the row to go")
        assert scored_by_key["approved"]["status"] == "approved"
        assert (
            scored_by_key["approved"]["action"]
            == CANDS[scored_by_key["approved"]["index"]]["action"]
        )
        assert scored_by_key["rejected"]["status"] == "rejected"
        assert scored_by_key["edited"]["status"] == "edited"
        assert scored_by_key["edited"]["action"] == "click('99')"
        assert all(d["by"] == "monitor:webshepherd-tui" for d in scored_by_key.values())

        # a request decided elsewhere disappears
        resolved = set(app.state.resolved)
        await agent.send(
            {
                "type": "score",
                "id": "c4",
                "session_id": sid,
                "candidates": CANDS,
                "samples": 1,
                "approval": "always",
            }
        )
        req = await other.wait_for(
            lambda m: m["type"] == "approval.request" and m["request_id"] not in resolved,
            timeout=60,
        )
        await wait_until(pilot, lambda: panel.table.row_count == 1, what="request 4")
        reply = await other.request(
            {"type": "approval.decide", "request_id": req["request_id"], "decision": "approve"}
        )
        assert reply["type"] == "approval.resolved"
        await wait_until(pilot, lambda: panel.table.row_count == 0, what="resolved elsewhere")
        assert app.state.approvals == {}
        scored = await agent.wait_for(lambda m: m.get("id") == "c4", timeout=30)
        assert scored["decision"]["by"] == "extension:ext"
        await pilot.press("a")  # nothing pending: a warning, no request
        await pilot.pause()


async def test_a_daemon_restart_is_survived(start_daemon, tmp_path):
    first = await start_daemon(base=tmp_path)
    port = first.server.port
    agent = await first.client(name="agent-1")
    sid = await start_session(agent)
    app = tui(first.url)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.link.catch_ups >= 1, what="connected")
        await step(agent, sid, 1)
        await wait_until(pilot, lambda: len(app.state.sessions[sid].scored_steps) == 1)
        await first.close_clients()
        await first.server.stop()
        await wait_until(pilot, lambda: not app.link.client.connected, what="the drop")
        await wait_for_text(pilot, app, "reconnecting")

        second = await start_daemon(base=tmp_path, port=port)
        agent2 = await second.client(name="agent-1")
        await step(agent2, sid, 2)  # seen live or by the catch-up, whichever comes first
        await agent2.request({"type": "session.end", "session_id": sid, "outcome": "failure"})
        await wait_until(pilot, lambda: app.link.client.reconnects >= 1, what="a reconnect")
        await wait_until(pilot, lambda: app.link.catch_ups >= 2, what="the catch-up")
        view = app.state.sessions[sid]
        await wait_until(pilot, lambda: view.state == "ended", what="the ended state")
        assert [s.step for s in app.state.sessions[sid].scored_steps] == [1, 2]
        assert (view.state, view.outcome) == ("ended", "failure")
        await wait_for_text(pilot, app, "connected to")
        assert app.screen.query_one(DataTable).row_count == 1


@pytest.mark.parametrize("credential", ["none", "revoked"])
async def test_an_unpaired_tui_monitors_but_decides_nothing(daemon, credential):
    """Without a credential, or with one revoked since `webshepherd pair tui`, the TUI still
    shows the request (and says how to pair), but `a` sends no decision: a person's paired
    extension decides it."""
    agent = await daemon.client(name="agent-1")
    person = await daemon.client(role="extension", name="ext")
    sid = await start_session(agent)
    approver = None
    if credential == "revoked":
        approver = await daemon.approver("monitor", "old-tui")
        (entry,) = [a for a in daemon.server.approvers.paired() if a.name == "old-tui"]
        daemon.server.approvers.revoke(entry.id)
    app = tui(daemon.url, approver)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_until(pilot, lambda: app.link.catch_ups >= 1, what="connected")
        assert not app.link.paired
        assert app.link.refused_approver is (credential == "revoked")
        await wait_until(
            pilot, lambda: "webshepherd pair tui" in screen_text(app), what="how to pair, shown"
        )
        panel = app.screen.query_one(ApprovalsPanel)
        await pilot.press("2")
        await agent.send(
            {
                "type": "score",
                "id": "c1",
                "session_id": sid,
                "candidates": CANDS,
                "samples": 1,
                "approval": "always",
            }
        )
        req = await person.wait_for("approval.request", timeout=60)
        await wait_until(pilot, lambda: panel.table.row_count == 1, what="the request")
        await pilot.press("a")
        await wait_until(
            pilot,
            lambda: any("not paired" in n.message for n in app._notifications),
            what="the TUI saying it is not paired",
        )
        assert panel.table.row_count == 1  # nothing was decided
        assert app.state.sessions[sid].state == "waiting_approval"
        reply = await person.request(
            {"type": "approval.decide", "request_id": req["request_id"], "decision": "reject"}
        )
        assert reply["type"] == "approval.resolved", reply
        scored = await agent.wait_for(lambda m: m.get("id") == "c1", timeout=30)
        assert scored["decision"]["by"] == "extension:ext"
        await wait_until(pilot, lambda: panel.table.row_count == 0, what="resolved by the person")
