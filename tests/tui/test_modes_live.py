"""The TUI with held requests and modes (issue 41) against a real daemon (a scripted judge:
these tests are about modes, paused requests and pairing, not judgements), driven by Pilot:
`m` switches the selected session's mode (a paired TUI only), a request the browser paused
shows its card and is approved or rejected as it is, flagged and refused requests show in the
session's detail with who refused and the way out, a pairing made while the TUI runs is taken
up, and a daemon that is not there is explained in words."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from textual.widgets import Label, Static
from webshepherd.daemon.cli import build_parser
from webshepherd.daemon.cli.tui import tui_app
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.commits import held_request, url_origin
from webshepherd.protocol.terminal_text import terminal_safe
from webshepherd.tui.app import WebShepherdApp
from webshepherd.tui.credential import read_credential, write_credential
from webshepherd.tui.screens.confirm_mode import ConfirmModeScreen
from webshepherd.tui.widgets.approvals_table import ApprovalsPanel

from tests.daemon.server.test_commits_live import JUDGE, POST, _session
from tests.fixtures.daemon import TEST_TOKEN, DaemonHandle, make_config
from tests.fixtures.ports import closed_port
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon
from tests.tui.helpers import FixedProbe, screen_text, wait_until

#: A POST to a look-alike host (Cyrillic о) whose field hides a right-to-left override.
SPOOF = held_request(
    "POST",
    "http://sh\u043ep.test/orders",
    "write",
    body=b"item=cable&note=ok\xe2\x80\xaeevil",
    content_type="application/x-www-form-urlencoded",
    page_url="http://shop.test/checkout",
    trigger="click('4')",
    element="4",
)


def tui(url: str, approver: str | None = None, credential=None) -> WebShepherdApp:
    return WebShepherdApp(
        url,
        TEST_TOKEN,
        probe=FixedProbe(),
        refresh_s=0.1,
        backoff_max_s=0.5,
        approver=approver,
        credential=credential,
    )


def text_of(app: WebShepherdApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).content)


def told(app: WebShepherdApp, words: str) -> bool:
    return any(words in n.message for n in app._notifications)


async def daemon_mode(agent: AsyncClient, sid: str) -> str | None:
    (summary,) = [s for s in await agent.sessions() if s.session_id == sid]
    return summary.mode


async def test_a_paired_tui_switches_modes_and_decides_a_paused_request(tmp_path: Path) -> None:
    async with scripted_daemon(tmp_path, ScriptedJudge(JUDGE)) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        async with AsyncClient(d.url, TEST_TOKEN) as agent:
            session = await _session(agent, holds="browser")
            sid = session.session_id
            app = tui(d.url, await d.approver("monitor", "webshepherd-tui"))
            async with app.run_test(size=(140, 48)) as pilot:
                await wait_until(pilot, lambda: app.link.catch_ups >= 1, what="connected")
                assert app.link.paired
                view = app.state.sessions[sid]
                await wait_until(pilot, lambda: view.mode == "ask", what="the mode at start")
                await wait_until(
                    pilot, lambda: "running · ask first" in screen_text(app), what="row"
                )

                # watch is looser: m asks first, naming the session; esc keeps 'ask'
                await pilot.press("m")
                await wait_until(
                    pilot, lambda: isinstance(app.screen, ConfirmModeScreen), what="the question"
                )
                asked = str(app.screen.query_one("#confirm-mode", Label).content)
                assert sid in asked and "'ask' to 'watch'" in asked, asked
                await pilot.press("escape")
                await wait_until(pilot, lambda: app.screen is app.main, what="the question closed")
                assert view.mode == "ask" and await daemon_mode(agent, sid) == "ask"

                # watch, confirmed: the request runs, flagged in the session's detail
                await pilot.press("m")
                await wait_until(
                    pilot, lambda: isinstance(app.screen, ConfirmModeScreen), what="asked again"
                )
                await pilot.press("y")
                await wait_until(pilot, lambda: view.mode == "watch", what="watch")
                said = app.mode_said(sid, "watch")
                assert said.endswith(f"{sid[:8]}: mode watch") and view.agent in said
                assert await daemon_mode(agent, sid) == "watch"
                got = await session.commit_check(POST, timeout=30)
                assert (got.decision.status, got.flagged) == ("approved", True)
                await wait_until(pilot, lambda: len(view.commits) == 1, what="the flagged one")
                await wait_until(
                    pilot,
                    lambda: "⚑ flagged POST http://shop.test/orders" in text_of(app, "#activity"),
                    what="the flagged request shown",
                )
                assert "requests decided: 0 approved, 1 flagged, 0 refused" in text_of(
                    app, "#activity"
                )
                assert view.commits[0].at is not None  # stamped when the TUI received it

                # stop is stricter: no question
                await pilot.press("m")
                await wait_until(pilot, lambda: view.mode == "stop", what="stop")
                assert not isinstance(app.screen, ConfirmModeScreen)
                got = await session.commit_check(POST, timeout=30)
                assert (got.decision.status, got.decision.decider) == ("rejected", "mode")
                await wait_until(pilot, lambda: len(view.commits) == 2, what="the refused one")
                activity = text_of(app, "#activity")
                await wait_until(
                    pilot,
                    lambda: (
                        "✗ refused POST http://shop.test/orders (by mode)"
                        in text_of(app, "#activity")
                    ),
                    what="the refusal shown",
                )
                activity = text_of(app, "#activity")
                assert f"way out: {got.decision.way_out}" in " ".join(activity.split())
                assert "by person" not in activity

                # ask (looser than stop, so asked and confirmed): a paired person decides on
                # the request's own card
                await pilot.press("m")
                await wait_until(
                    pilot, lambda: isinstance(app.screen, ConfirmModeScreen), what="asked"
                )
                await pilot.press("y")
                await wait_until(pilot, lambda: view.mode == "ask", what="ask again")
                asking = asyncio.create_task(session.commit_check(SPOOF, timeout=30))
                panel = app.screen.query_one(ApprovalsPanel)
                await pilot.press("2")
                await wait_until(pilot, lambda: panel.table.row_count == 1, what="the request")
                await wait_until(
                    pilot, lambda: "method" in text_of(app, "#approval-detail"), what="its card"
                )
                card = text_of(app, "#approval-detail")
                pending = panel.selected
                assert pending is not None and pending.card is not None
                assert pending.card.headline and card.startswith(
                    terminal_safe(pending.card.headline)
                )  # the daemon's plain words first
                assert "xn--" in card and "\u043e" not in card  # the host as punycode
                assert "ok\\u202eevil" in card and "\u202e" not in card  # escaped
                assert "click('4')" in card and "origin" in card
                assert "no edit" in text_of(app, "#approval-keys")
                # a paused request is not edited: the footer offers no Edit and e does nothing
                await wait_until(
                    pilot, lambda: "e Edit" not in screen_text(app).splitlines()[-1], what="no Edit"
                )
                await pilot.press("e")
                await pilot.pause()
                assert app.screen is app.main and panel.table.row_count == 1
                await pilot.press("a")
                got = await asking
                assert (got.decision.status, got.decision.decider) == ("approved", "person")
                await wait_until(pilot, lambda: panel.table.row_count == 0, what="the row gone")
                # a person's approval is listed too, approved, apart from the flagged one
                await wait_until(pilot, lambda: len(view.commits) == 3, what="the approved one")
                assert [c.outcome for c in view.commits] == ["flagged", "refused", "approved"]
                await wait_until(
                    pilot,
                    lambda: "✓ approved POST http://xn--shp-" in text_of(app, "#activity"),
                    what="the approval shown",
                )
                activity = text_of(app, "#activity")
                assert "requests decided: 1 approved, 1 flagged, 1 refused" in activity
                assert re.search(r"\d\d:\d\d:\d\d ✓ approved POST", activity)

                # A approves and allows the request's site for the rest of the session: asked
                # first, naming the session and the origin; esc keeps asking
                origin = url_origin(SPOOF.url)
                asking = asyncio.create_task(session.commit_check(SPOOF, timeout=30))
                await wait_until(pilot, lambda: panel.table.row_count == 1, what="asked again")
                await pilot.press("A")
                await wait_until(
                    pilot, lambda: isinstance(app.screen, ConfirmModeScreen), what="asked first"
                )
                said = " ".join(text_of(app, "#confirm-mode").split())
                assert f"allow {origin} for the rest of" in said and sid in said
                await pilot.press("escape")
                await pilot.pause()
                assert not asking.done() and panel.table.row_count == 1
                await pilot.press("A")
                await wait_until(
                    pilot, lambda: isinstance(app.screen, ConfirmModeScreen), what="asked again"
                )
                await pilot.press("y")
                got = await asking
                assert (got.decision.status, got.decision.decider) == ("approved", "person")
                assert f"{origin} allowed for the rest of this session" in (got.decision.note or "")
                got = await session.commit_check(SPOOF, timeout=30)  # not asked: flagged
                assert (got.decision.status, got.flagged) == ("approved", True)
        await d.close_clients()


async def test_an_unpaired_tui_changes_no_mode_and_takes_up_a_pairing_while_running(
    tmp_path: Path,
) -> None:
    config = tmp_path / "tui-config"
    async with scripted_daemon(tmp_path, ScriptedJudge(JUDGE)) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        async with AsyncClient(d.url, TEST_TOKEN) as agent:
            session = await _session(agent, holds="browser")
            sid = session.session_id
            app = tui(d.url, read_credential(config), lambda: read_credential(config))
            async with app.run_test(size=(140, 40)) as pilot:
                await wait_until(pilot, lambda: app.link.catch_ups >= 1, what="connected")
                assert not app.link.paired
                view = app.state.sessions[sid]
                await wait_until(pilot, lambda: view.mode == "ask", what="the mode")
                await wait_until(pilot, lambda: "running · ask" in screen_text(app), what="row")
                await pilot.press("m")
                await wait_until(pilot, lambda: told(app, "not paired"), what="not paired")
                assert view.mode == "ask" and await daemon_mode(agent, sid) == "ask"

                # `webshepherd pair tui` at a terminal while the TUI runs
                write_credential(await d.approver("monitor", "webshepherd-tui"), config)
                await wait_until(pilot, lambda: app.link.paired, what="the pairing taken up")
                assert app.link.repairs == 1
                await wait_until(
                    pilot, lambda: "paired: decides approvals" in screen_text(app), what="said"
                )
                await pilot.press("m")
                await wait_until(
                    pilot, lambda: isinstance(app.screen, ConfirmModeScreen), what="asked"
                )
                await pilot.press("y")
                await wait_until(pilot, lambda: view.mode == "watch", what="watch")
                assert await daemon_mode(agent, sid) == "watch"
        await d.close_clients()


async def test_no_daemon_is_explained_with_the_command_that_starts_one() -> None:
    url = f"ws://127.0.0.1:{closed_port()}/v1"
    app = tui(url)
    async with app.run_test(size=(160, 24)) as pilot:
        await wait_until(
            pilot, lambda: "no webshepherd daemon answers" in screen_text(app), what="the words"
        )
        line = screen_text(app).splitlines()[0]
        assert url in line and "`webshepherd serve`" in line
        assert "(internal)" not in line and "retryable" not in line


async def test_a_wrong_path_is_said_once_not_retried(tmp_path: Path) -> None:
    """A URL without /v1 reaches a server that is the daemon but not its address: the status
    line names the path it serves instead of "no daemon answers (retrying)" (issue 48.8)."""
    async with scripted_daemon(tmp_path, ScriptedJudge(JUDGE)) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        wrong = d.url.removesuffix("/v1") + "/"
        app = tui(wrong)
        async with app.run_test(size=(160, 24)) as pilot:
            await wait_until(
                pilot, lambda: "wrong path" in screen_text(app), what="the wrong path said"
            )
            line = screen_text(app).splitlines()[0]
            assert "/v1" in line and "retrying" not in line
        await d.close_clients()


def test_webshepherd_tui_follows_webshepherd_url(monkeypatch, tmp_path: Path) -> None:
    url = f"ws://127.0.0.1:{closed_port()}/v1"
    monkeypatch.setenv("WEBSHEPHERD_URL", url)
    monkeypatch.setenv("WEBSHEPHERD_TOKEN", TEST_TOKEN)
    monkeypatch.setenv("WEBSHEPHERD_CONFIG_DIR", str(tmp_path))
    app = tui_app(build_parser().parse_args(["tui"]))
    assert app.link.url == url
    given = tui_app(build_parser().parse_args(["tui", "--url", "ws://127.0.0.1:1/v1"]))
    assert given.link.url == "ws://127.0.0.1:1/v1"  # --url before the environment
