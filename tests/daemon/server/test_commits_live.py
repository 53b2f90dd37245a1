"""Held requests and modes over real sockets (issue 41): a request the browser paused
(``commit.check``) is answered by the session's mode (a paired person decides in 'ask'; with
nobody paired it is refused at once), sandbox origins are flagged, only a paired person sets
the mode, a session whose browser holds commits gets the rules' predictions only, and every
refusal says who refused and the way out. The judge is scripted: these tests are about the
holds, not about judgements."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Any

import pytest
from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.recorder import History
from webshepherd.daemon.sessions.guards import ALL_RULES, GuardPolicy
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.commits import held_request, request_digest
from webshepherd.protocol.errors import UnauthorizedError

from tests.fixtures.daemon import REFERENCE, TEST_TOKEN, DaemonHandle, make_config
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon

URL = "http://shop.test/checkout"
OBS = {
    "url": URL,
    "axtree": "\n".join(
        ["RootWebArea 'Checkout', focused", "\t[4] button 'Place order'", "\t[5] button 'Submit'"]
    ),
    "elements": {
        "4": {"tag": "button", "submits": True, "form_method": "POST",
              "form_action": "http://shop.test/orders"},
        "5": {"tag": "button"},
    },
}  # fmt: skip
ORDER = ("Place the order.", "click('4')")
SUBMIT = ("Submit it.", "click('5')")
JUDGE = {(URL, ORDER[1]): (0.95, (2, 1), "orders"), (URL, SUBMIT[1]): (0.9, (2, 1), "submits")}
POST = held_request(
    "POST",
    "http://shop.test/orders",
    "write",
    body=b"item=cable&qty=1",
    content_type="application/x-www-form-urlencoded",
    page_url=URL,
    trigger="click('4')",
    element="4",
)


async def _session(client: AsyncClient, **kw: Any):  # type: ignore[no-untyped-def]
    return await client.start_session(
        "Buy a cable", start_url="http://shop.test/", observation=OBS, checklist=REFERENCE, **kw
    )


@pytest.mark.parametrize(
    ("mode", "paired", "status", "decider", "flagged"),
    [
        ("ask", False, "rejected", "daemon", False),
        ("watch", False, "approved", "mode", True),
        ("watch", True, "approved", "mode", True),
        ("stop", False, "rejected", "mode", False),
        ("stop", True, "rejected", "mode", False),
    ],
)
async def test_a_paused_request_is_answered_at_once_by_the_mode(
    tmp_path: Path, mode: str, paired: bool, status: str, decider: str, flagged: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    async with scripted_daemon(tmp_path, ScriptedJudge(JUDGE), mode=mode) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        if paired:
            monitor = await d.client(role="monitor", name="tui")
        async with AsyncClient(d.url, TEST_TOKEN) as agent:
            session = await _session(agent, holds="browser")
            with caplog.at_level(logging.WARNING, logger="webshepherd"):
                got = await session.commit_check(POST, timeout=30)
            assert (got.decision.status, got.decision.decider, got.flagged) == (
                status, decider, flagged,
            )  # fmt: skip
            assert got.decision.mode == mode and got.request == POST
            assert got.request_digest == request_digest(POST)
            if status == "rejected":
                assert got.decision.way_out and "a person" not in (got.decision.note or "")
                line = next(
                    r.getMessage() for r in caplog.records if "paused request" in r.getMessage()
                )
                assert f"refused by {decider} (mode {mode}): " in line
                assert f"— way out: {got.decision.way_out}" in line
            if paired:  # the person's tool sees the answer as an event
                event = await monitor.wait_for("commit.decided", timeout=30)
                assert event["request_digest"] == got.request_digest
            history = await agent.session(session.session_id)
            (logged,) = [e for e in history.events if e["type"] == "commit.decided"]
            assert logged["decision"]["decider"] == decider
        await d.close_clients()
    if decider == "daemon":
        assert "--sandbox-origin http://shop.test" in (got.decision.way_out or "")
        assert "webshepherd pair tui" in (got.decision.way_out or "")
        tl = History.open(tmp_path / "data" / DB_NAME).timeline(session.session_id)
        assert tl is not None
        (row,) = [a for s in tl.steps for a in s.approvals]
        assert (row.reason, row.decision, row.decided_by) == ("commit", "reject", "daemon")


@pytest.mark.parametrize(("decision", "status"), [("approve", "approved"), ("reject", "rejected")])
async def test_in_ask_a_paired_person_decides(tmp_path: Path, decision: str, status: str) -> None:
    async with scripted_daemon(tmp_path, ScriptedJudge(JUDGE)) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        monitor = await d.client(role="monitor", name="tui")
        async with AsyncClient(d.url, TEST_TOKEN) as agent:
            session = await _session(agent, holds="browser")
            asking = asyncio.create_task(session.commit_check(POST, timeout=30))
            req = await monitor.wait_for("approval.request", timeout=30)
            assert req["reason"] == "commit" and req["reward"] is None
            assert req["candidate"]["action"] == "click('4')"
            card = req["card"]
            assert card["headline"] == "Waiting for you: this sends a POST to shop.test/orders"
            assert card["request"]["fields"] == [
                {"name": "item", "value": "cable"},
                {"name": "qty", "value": "1"},
            ]
            assert not asking.done()
            edit = await monitor.request(
                {"type": "approval.decide", "request_id": req["request_id"], "decision": "edit",
                 "action": "click('5')"}
            )  # fmt: skip
            assert edit["type"] == "error" and "'edit' does not apply" in edit["message"]
            await monitor.request(
                {"type": "approval.decide", "request_id": req["request_id"], "decision": decision}
            )
            got = await asking
            assert (got.decision.status, got.decision.decider, got.decision.by) == (
                status, "person", "monitor:tui",
            )  # fmt: skip
            assert got.request_digest == request_digest(POST) and not got.flagged
        await d.close_clients()
    tl = History.open(tmp_path / "data" / DB_NAME).timeline(session.session_id)
    assert tl is not None
    (row,) = [a for s in tl.steps for a in s.approvals]
    assert (row.reason, row.decision, row.decided_by) == ("commit", decision, "monitor:tui")


async def test_a_request_whose_browser_went_away_is_refused_and_its_card_closed(
    tmp_path: Path,
) -> None:
    """The connection that paused a request closes before anyone decides (its browser failed
    the request when it lost the daemon): the daemon refuses it, the person's card closes, and
    a late Approve is an error, never "allowed by a person" (issue 49)."""
    async with scripted_daemon(tmp_path, ScriptedJudge(JUDGE)) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        monitor = await d.client(role="monitor", name="tui")
        agent = AsyncClient(d.url, TEST_TOKEN)
        await agent.connect()
        session = await _session(agent, holds="browser")
        asking = asyncio.create_task(session.commit_check(POST, timeout=30))
        req = await monitor.wait_for("approval.request", timeout=30)
        asking.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asking
        await agent.close()
        gone = await monitor.wait_for("approval.resolved", timeout=30)
        assert gone["request_id"] == req["request_id"]
        assert (gone["decision"], gone["by"]) == ("reject", "daemon")
        assert "went away" in gone["note"]
        late = await monitor.request(
            {"type": "approval.decide", "request_id": req["request_id"], "decision": "approve"}
        )
        assert late["type"] == "error"
        await d.close_clients()
    tl = History.open(tmp_path / "data" / DB_NAME).timeline(session.session_id)
    assert tl is not None
    (row,) = [a for s in tl.steps for a in s.approvals]
    assert (row.reason, row.decision, row.decided_by) == ("commit", "reject", "daemon")


async def test_nobody_deciding_in_time_refuses_the_request(tmp_path: Path) -> None:
    judge = ScriptedJudge(JUDGE)
    async with scripted_daemon(
        tmp_path, judge, approval_timeout_s=0.3, approval_default="approve"
    ) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        await d.client(role="monitor", name="tui")
        async with AsyncClient(d.url, TEST_TOKEN) as agent:
            session = await _session(agent, holds="browser")
            got = await session.commit_check(POST, timeout=30)
            assert (got.decision.status, got.decision.decider) == ("timeout", "timeout")
            assert got.decision.way_out and "never let go by default" in got.decision.note
        await d.close_clients()


async def test_sandbox_origins_are_flagged_never_held(tmp_path: Path) -> None:
    async with scripted_daemon(
        tmp_path, ScriptedJudge(JUDGE), sandbox_origins=("http://shop.test:*",)
    ) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        monitor = await d.client(role="monitor", name="tui")  # a person is there: not asked
        async with AsyncClient(d.url, TEST_TOKEN) as agent:
            session = await _session(agent, holds="browser")
            got = await session.commit_check(POST, timeout=30)
            assert (got.decision.status, got.decision.decider, got.flagged) == (
                "approved", "sandbox", True,
            )  # fmt: skip
            elsewhere = POST.model_copy(
                update={
                    "url": "http://evil.test/x",
                    "origin": "http://evil.test",
                    "page_url": "http://evil.test/",
                }
            )
            asking = asyncio.create_task(session.commit_check(elsewhere, timeout=30))
            req = await monitor.wait_for("approval.request", timeout=30)  # off the sandbox
            assert req["reason"] == "commit"
            asking.cancel()
        await d.close_clients()


async def test_a_person_allows_one_origin_for_the_rest_of_the_session(tmp_path: Path) -> None:
    async with scripted_daemon(tmp_path, ScriptedJudge(JUDGE)) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        monitor = await d.client(role="monitor", name="tui")
        async with AsyncClient(d.url, TEST_TOKEN) as agent:
            session = await _session(agent, holds="browser")
            asking = asyncio.create_task(session.commit_check(POST, timeout=30))
            req = await monitor.wait_for("approval.request", timeout=30)
            wrong = await monitor.request(
                {"type": "approval.decide", "request_id": req["request_id"],
                 "decision": "reject", "allow_origin": True}
            )  # fmt: skip
            assert wrong["type"] == "error" and "only an 'approve'" in wrong["message"]
            said = await monitor.request(
                {"type": "approval.decide", "request_id": req["request_id"],
                 "decision": "approve", "allow_origin": True, "note": "my own shop"}
            )  # fmt: skip
            allowed = "http://shop.test allowed for the rest of this session"
            assert said["note"] == f"{allowed}; my own shop"
            got = await asking
            assert (got.decision.status, got.decision.decider, got.flagged) == (
                "approved", "person", False,
            )  # fmt: skip
            assert allowed in (got.decision.note or "")
            # the next write to that origin runs flagged without asking (another path, the
            # host in capitals, the default port)
            later = POST.model_copy(update={"url": "http://SHOP.test:80/cart/add"})
            got = await session.commit_check(later, timeout=30)
            assert (got.decision.status, got.decision.decider, got.decision.by, got.flagged) == (
                "approved", "person", "monitor:tui", True,
            )  # fmt: skip
            assert got.decision.note == (
                "http://shop.test was allowed for the rest of this session by monitor:tui: "
                "flagged, not held"
            )
            # a write to another origin still asks
            elsewhere = POST.model_copy(update={"url": "http://evil.test/x"})
            asking = asyncio.create_task(session.commit_check(elsewhere, timeout=30))
            req = await monitor.wait_for("approval.request", timeout=30)
            assert req["card"]["request"]["url"] == "http://evil.test/x"
            assert not asking.done()
            asking.cancel()
        await d.close_clients()
    tl = History.open(tmp_path / "data" / DB_NAME).timeline(session.session_id)
    assert tl is not None
    rows = [a for s in tl.steps for a in s.approvals]
    assert rows[0].decision == "approve" and "allowed for the rest" in (rows[0].note or "")


async def test_only_a_paired_person_sets_the_mode_and_it_outlives_a_restart(
    tmp_path: Path,
) -> None:
    async with scripted_daemon(tmp_path, ScriptedJudge(JUDGE)) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        ext = await d.client(role="extension", name="side panel")
        async with AsyncClient(d.url, TEST_TOKEN) as agent:
            session = await _session(agent, holds="browser")
            with pytest.raises(UnauthorizedError, match=r"session\.mode: a connection with role"):
                await session.set_mode("watch")
            with pytest.raises(
                UnauthorizedError, match=r"approval\.decide: a connection with role"
            ):
                await agent.decide("a1-x", "approve")  # the same error kind
            set_ = await ext.request(
                {"type": "session.mode", "session_id": session.session_id, "mode": "watch"}
            )
            assert (set_["type"], set_["mode"], set_["by"]) == (
                "mode.set",
                "watch",
                "extension:side panel",
            )
            (summary,) = await agent.sessions()
            assert summary.mode == "watch"
            got = await session.commit_check(POST, timeout=30)  # the extension is paired
            assert got.decision.decider == "mode" and got.flagged
        await d.close_clients()
    async with contextlib.AsyncExitStack() as stack:
        server = await stack.enter_async_context(scripted_daemon(tmp_path, ScriptedJudge(JUDGE)))
        agent = await stack.enter_async_context(AsyncClient(server.url, TEST_TOKEN))
        got = await agent.commit_check(session.session_id, POST, timeout=30)
        assert (got.decision.decider, got.decision.mode) == ("mode", "watch")


async def test_a_paired_tool_asks_about_a_tab_it_watches_and_others_may_not(
    tmp_path: Path,
) -> None:
    async with scripted_daemon(tmp_path, ScriptedJudge(JUDGE), mode="watch") as server:
        d = DaemonHandle(server, make_config(tmp_path))
        ext = await d.client(role="extension", name="side panel")
        other = await d.client()  # another agent's connection
        async with AsyncClient(d.url, TEST_TOKEN) as agent:
            session = await _session(agent)
            msg = {"type": "commit.check", "session_id": session.session_id,
                   "request": POST.model_dump(mode="json")}  # fmt: skip
            got = await ext.request(msg)
            assert got["type"] == "commit.decided" and got["flagged"]
            refused = await other.request(msg)
            assert refused["type"] == "error" and refused["code"] == "unauthorized"
        await d.close_clients()


async def test_where_the_browser_holds_a_place_order_click_runs_with_its_prediction(
    tmp_path: Path,
) -> None:
    async with scripted_daemon(tmp_path, ScriptedJudge(JUDGE)) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        person = await d.client(role="monitor", name="tui")  # a person is there: still not held
        async with AsyncClient(d.url, TEST_TOKEN) as agent:
            session = await _session(agent, holds="browser")
            scored = await session.score([ORDER, SUBMIT], samples=1, timeout=30)
            assert scored.decision.status == "auto" and scored.decision.action == ORDER[1]
            assert scored.guarded is None
            assert [(p.index, [h.rule for h in p.hits]) for p in scored.predicted or []] == [
                (0, ["form_submit"])
            ]
            text_only = await _session(agent)  # no browser gate: the rules hold, predicted too
            asking = asyncio.create_task(text_only.score([ORDER], samples=1, timeout=30))
            await person.wait_for("approval.request")  # held for the person
            assert not asking.done()
            asking.cancel()
        await d.close_clients()


async def test_a_name_alone_holds_nothing_unless_the_stricter_policy_is_on(
    tmp_path: Path,
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        server = await stack.enter_async_context(scripted_daemon(tmp_path, ScriptedJudge(JUDGE)))
        agent = await stack.enter_async_context(AsyncClient(server.url, TEST_TOKEN))
        scored = await (await _session(agent)).score([SUBMIT], samples=1, timeout=30)
        assert scored.decision.status == "auto" and scored.predicted is None
    strict = GuardPolicy(rules=frozenset(ALL_RULES))  # serve --guard-names
    async with contextlib.AsyncExitStack() as stack:
        server = await stack.enter_async_context(
            scripted_daemon(tmp_path / "strict", ScriptedJudge(JUDGE), guards=strict)
        )
        agent = await stack.enter_async_context(AsyncClient(server.url, TEST_TOKEN))
        scored = await (await _session(agent)).score([SUBMIT], samples=1, timeout=30)
        d_ = scored.decision
        assert (d_.status, d_.decider, [h.rule for h in d_.guard]) == (
            "rejected", "guard", ["name_match"],
        )  # fmt: skip
        assert "--no-guard name_match" in (d_.way_out or "")


async def test_watching_a_low_reward_never_waits(tmp_path: Path) -> None:
    low = {(URL, SUBMIT[1]): (0.1, (0, 0), "unsure")}
    async with scripted_daemon(tmp_path, ScriptedJudge(low), mode="watch") as server:
        d = DaemonHandle(server, make_config(tmp_path))
        await d.client(role="monitor", name="tui")  # a paired TUI, merely open
        async with AsyncClient(d.url, TEST_TOKEN) as agent:
            scored = await (await _session(agent)).score([SUBMIT], samples=1, timeout=30)
            d_ = scored.decision
            assert (d_.status, d_.decider, d_.mode) == ("auto", "mode", "watch")
        await d.close_clients()


async def test_the_blocking_client_asks_and_is_told(tmp_path: Path) -> None:
    from webshepherd.protocol.client.sync import Client

    async with scripted_daemon(tmp_path, ScriptedJudge(JUDGE), mode="stop") as server:

        def blocking() -> tuple[str | None, str | None, bool | None]:
            with Client(server.url, token=TEST_TOKEN, name="gate") as c:
                session = c.start_session(
                    "Buy a cable", observation=OBS, checklist=REFERENCE, holds="browser"
                )
                mine = session.commit_check(POST)
                again = c.commit_check(session.session_id, POST)
                assert again.request_digest == mine.request_digest
                refused = False
                try:
                    session.set_mode("watch")
                except UnauthorizedError:
                    refused = True
                (summary,) = c.sessions()
                return mine.decision.decider, summary.mode, refused

        assert await asyncio.to_thread(blocking) == ("mode", "stop", True)


async def test_the_operators_commit_gets_reach_every_gate_in_session_started(
    tmp_path: Path,
) -> None:
    """serve --commits: session.started (the reply and the event a paired tool gets) carries
    the patterns; a matching GET the gate asks about is decided by the mode like a write."""
    pattern = "GET http://shop.test/cart/remove*"
    async with scripted_daemon(tmp_path, ScriptedJudge(JUDGE), commits=(pattern,)) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        async with AsyncClient(d.url, TEST_TOKEN) as agent:
            session = await _session(agent, holds="browser")
            assert session.commits == (pattern,)
            remove = held_request(
                "GET", "http://shop.test/cart/remove?item=3", "write", page_url=URL
            )
            got = await session.commit_check(remove, timeout=30)  # ask, nobody paired
            assert (got.decision.status, got.decision.decider) == ("rejected", "daemon")
            monitor = await d.client(role="monitor", name="tui")
            listed = await monitor.request(
                {"type": "session.get", "session_id": session.session_id}
            )
            started = next(e for e in listed["events"] if e["type"] == "session.started")
            assert started["commits"] == [pattern]
            asking = asyncio.create_task(session.commit_check(remove, timeout=30))
            req = await monitor.wait_for("approval.request", timeout=30)
            assert req["card"]["request"]["url"] == remove.url
            assert [h["rule"] for h in req["card"]["predicts"]] == ["commit_get"]
            await monitor.request(
                {"type": "approval.decide", "request_id": req["request_id"], "decision": "approve"}
            )
            got = await asking
            assert got.decision.status == "approved"
            assert got.request_digest == request_digest(remove)
        await d.close_clients()
    # the rules read the same patterns: a link to a named GET is predicted, whatever its name
    cart = {
        "url": "http://shop.test/cart",
        "axtree": "RootWebArea 'Cart', focused\n\t[7] link 'x'",
        "elements": {"7": {"tag": "a", "href": "http://shop.test/cart/remove?item=3"}},
    }
    judge = ScriptedJudge({("http://shop.test/cart", "click('7')"): (0.9, (2, 1), "x")})
    async with (
        scripted_daemon(tmp_path / "rules", judge, commits=(pattern,)) as server,
        AsyncClient(server.url, TEST_TOKEN) as agent,
    ):
        session = await agent.start_session(
            "Tidy the cart", start_url="http://shop.test/", observation=cart, checklist=REFERENCE,
            holds="browser",
        )  # fmt: skip
        scored = await session.score(["click('7')"], samples=1, timeout=30)
        assert scored.decision.status == "auto"  # the browser holds; the rules predict
        ((hit,),) = [p.hits for p in scored.predicted or []]
        assert hit.rule == "commit_get" and hit.detail.endswith(f"({pattern})")
    async with (
        scripted_daemon(tmp_path / "none", ScriptedJudge(JUDGE)) as server,
        AsyncClient(server.url, TEST_TOKEN) as agent,
    ):
        assert (await _session(agent, holds="browser")).commits == ()


async def test_a_paused_requests_card_names_the_step_that_caused_it(tmp_path: Path) -> None:
    """Issue 51.2: the card of a request that a scored action caused names that action's
    element, a crop of it, the page's amount near it, the field as the page labels it, the
    reward and the checklist item, why it waits, when it times out and what each answer does."""
    import base64
    import io
    import time

    from PIL import Image

    shot = io.BytesIO()
    Image.new("RGB", (800, 600), (255, 255, 255)).save(shot, format="PNG")
    obs = {
        **OBS,
        "axtree": OBS["axtree"]
        + "\n\t[6] spinbutton 'Quantity' value='1'\n\tStaticText 'Total: $4.99'",
        "screenshot": {"mime": "image/png", "data": base64.b64encode(shot.getvalue()).decode()},
        "boxes": {"4": [200, 300, 100, 30]},
    }
    async with scripted_daemon(tmp_path, ScriptedJudge(JUDGE)) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        monitor = await d.client(role="monitor", name="tui")
        async with AsyncClient(d.url, TEST_TOKEN) as agent:
            session = await agent.start_session(
                "Buy a cable", start_url="http://shop.test/", observation=obs,
                checklist=REFERENCE, holds="browser",
            )  # fmt: skip
            await session.score([ORDER, SUBMIT], approval="never", timeout=30)
            asking = asyncio.create_task(session.commit_check(POST, timeout=30))
            req = await monitor.wait_for("approval.request", timeout=30)
            card = req["card"]
            t = card["target"]
            assert (t["bid"], t["role"], t["name"], t["box"]) == (
                "4", "button", "Place order", [16.0, 16.0, 100.0, 30.0],
            )  # fmt: skip
            assert card["screenshot"]["mime"] == "image/png"
            with Image.open(io.BytesIO(base64.b64decode(card["screenshot"]["data"]))) as crop:
                assert crop.size == (132, 62)
            assert card["amounts"] == ["Total: $4.99"]
            assert card["labels"] == [{"name": "qty", "label": "Quantity"}]
            assert card["judge"] == {
                "step": 0, "reward": 0.95, "item": 1, "item_title": "Search for cables",
            }  # fmt: skip
            assert "mode is 'ask'" in card["why"] and "POST to shop.test/orders" in card["why"]
            left = card["expires_at"] - time.time()
            assert req["expires_in_s"] - 10 < left <= req["expires_in_s"]
            assert card["on_approve"] and card["on_reject"].startswith("Nothing is sent")
            await monitor.request(
                {"type": "approval.decide", "request_id": req["request_id"], "decision": "reject"}
            )
            assert (await asking).decision.status == "rejected"
        await d.close_clients()
