"""The browser holds what commits (``webshepherd.integrations.commit_gate``) under the
BrowserGym pin's Playwright (1.44, sync API), in Debian's Chromium, on the write pages
(tests/fixtures/write_pages): each way a click commits is held before it reaches the recording
server, sent once when approved, asked again when it differs; harmless pages ask nothing. The
last tests ask a real daemon (``commit.check``) by the session's mode."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright
from webshepherd.integrations.commit_gate import CommitGate, GateError
from webshepherd.integrations.playwright import hold_commits
from webshepherd.protocol.client.sync import Client
from webshepherd.protocol.commits import request_digest
from webshepherd.protocol.common import DecisionInfo, HeldRequest
from webshepherd.protocol.replies import CommitDecided

from tests.fixtures.poll import until_sync
from tests.fixtures.write_pages import (
    DOWNLOAD,
    FETCH_POST,
    FORM_ATTRIBUTE,
    GET_SEARCH,
    HARMLESS_PAGES,
    MINIWOB_SUBMIT,
    REDIRECT_OUT,
    WRITE_PAGES,
    Expected,
    WritePage,
    WriteServers,
)
from tests.integrations.conftest import CHROMIUM, Daemon, daemon_process

#: How long a refused request is given to arrive anyway once its refusal is recorded (a fixed
#: interval: proving that nothing arrives; a slow machine makes the check weaker, never flaky).
AFTER_S = 0.4


@dataclass
class Decider:
    """A decide() that answers ``status`` about each request it is asked, and keeps them."""

    status: str = "rejected"
    asked: list[HeldRequest] = field(default_factory=list)
    digest: Callable[[HeldRequest], str] = request_digest

    def __call__(self, request: HeldRequest) -> CommitDecided:
        self.asked.append(request)
        info = DecisionInfo.model_validate(
            {"status": self.status, "by": "test", "decider": "mode", "mode": "ask"}
        )
        return CommitDecided(
            session_id="s", request=request, request_digest=self.digest(request), decision=info
        )


@dataclass
class Browser:
    servers: WriteServers
    context: Any
    page: Any

    def pump(self, seconds: float = 0.05) -> None:
        """Let Playwright run (its sync API runs the gate's handlers only inside its calls)."""
        self.page.wait_for_timeout(int(seconds * 1000))

    def until(self, done: Callable[[], bool], what: str) -> None:
        until_sync(done, what=what, interval=0.05, pause=self.pump)


@pytest.fixture
def browser() -> Iterator[Browser]:
    with WriteServers() as servers, sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM)
        try:
            context = chromium.new_context()
            yield Browser(servers, context, context.new_page())
        finally:
            chromium.close()


def open_page(
    b: Browser, wp: WritePage, decide: Callable[[HeldRequest], CommitDecided]
) -> CommitGate:
    gate = CommitGate(decide)
    gate.attach(b.context, start_url=b.servers.home)
    b.page.goto(b.servers.url(wp))
    b.servers.clear()
    return gate


def saved(gate: CommitGate) -> list[str]:
    """The files a gated context saved where its caller looks (Playwright's own Download
    objects of a gated context never get a file: the gate's held folder does, until decided)."""
    return sorted(p.name for p in gate.downloads_dir.iterdir())


@pytest.mark.parametrize("wp", WRITE_PAGES, ids=lambda wp: wp.name)
def test_a_refused_write_never_reaches_the_server(browser: Browser, wp: WritePage) -> None:
    decide = Decider("rejected")
    gate = open_page(browser, wp, decide)
    gate.trigger("click('go')")
    wp.act(browser.page)
    browser.until(lambda: len(decide.asked) == 1, f"{wp.name}: asked once")
    browser.pump(AFTER_S)
    (held,) = decide.asked
    assert held.kind == wp.kind
    assert (held.trigger, held.element) == ("click('go')", "go")
    assert held.page_url == browser.servers.url(wp)
    for expected in wp.held:
        assert (held.method, held.url) == (expected.method, server_url(browser, expected))
        assert browser.servers.count(expected) == 0, browser.servers.received()
    if wp.download:  # the request reached the server; the file was not saved
        assert held.url == browser.servers.home + wp.sends[0].path and saved(gate) == []
        assert held.fields[0].value == wp.download
    (refused,) = gate.take_decisions()
    assert refused.decision.status == "rejected" and refused.request == held
    assert browser.page.url == browser.servers.url(wp)  # no error page: the page stays


@pytest.mark.parametrize("wp", WRITE_PAGES, ids=lambda wp: wp.name)
def test_an_approved_write_arrives_exactly_once(browser: Browser, wp: WritePage) -> None:
    decide = Decider("approved")
    gate = open_page(browser, wp, decide)
    wp.act(browser.page)
    for expected in wp.sends:
        browser.servers.wait_for(expected, pump=browser.pump)
    if wp.download:
        browser.until(lambda: saved(gate) == [wp.download], "the download")
        assert gate.saved == [gate.downloads_dir / wp.download]
    browser.pump(AFTER_S)
    for expected in wp.sends:
        assert browser.servers.count(expected) == 1, browser.servers.received()
    assert len(decide.asked) == 1 and decide.asked[0].kind == wp.kind
    assert [d.decision.status for d in gate.take_decisions()] == ["approved"]
    assert gate.take_decisions() == []  # taken once


def test_the_fetch_posts_fields_are_what_it_would_send(browser: Browser) -> None:
    decide = Decider("rejected")
    open_page(browser, FETCH_POST, decide)
    FETCH_POST.act(browser.page)
    browser.until(lambda: len(decide.asked) == 1, "asked")
    (held,) = decide.asked
    assert [(f.name, f.value) for f in held.fields] == [("item", "usb-c cable"), ("qty", "2")]
    assert held.origin == browser.servers.home and held.top_level is False
    browser.until(lambda: "failed" in browser.page.inner_text("#out"), "the page's fetch failed")


@pytest.mark.parametrize("wp", HARMLESS_PAGES, ids=lambda wp: wp.name)
def test_harmless_pages_ask_nothing_and_run(browser: Browser, wp: WritePage) -> None:
    decide = Decider("rejected")
    gate = open_page(browser, wp, decide)
    wp.act(browser.page)
    for expected in wp.sends:  # a same-origin GET navigation: not held
        browser.servers.wait_for(expected, pump=browser.pump)
    if wp.done:
        browser.until(lambda: browser.page.inner_text("#out") == wp.done, "the script ran")
    browser.pump(AFTER_S)
    assert decide.asked == [] and gate.take_decisions() == []


def test_a_same_origin_hop_is_not_held_its_redirect_elsewhere_is(browser: Browser) -> None:
    decide = Decider("rejected")
    open_page(browser, REDIRECT_OUT, decide)
    REDIRECT_OUT.act(browser.page)
    browser.until(lambda: len(decide.asked) == 1, "asked")
    first, redirected = REDIRECT_OUT.sends
    assert browser.servers.count(first) == 1  # GET /out left unheld
    assert decide.asked[0].url == server_url(browser, redirected)


def test_a_different_request_after_an_approval_is_asked_again(browser: Browser) -> None:
    decide = Decider("approved")
    open_page(browser, FETCH_POST, decide)
    FETCH_POST.act(browser.page)
    browser.servers.wait_for(Expected("POST", "home", "/api/order"), pump=browser.pump)
    browser.page.evaluate(
        "fetch('/api/order', {method: 'POST', headers: {'Content-Type': 'application/json'},"
        " body: JSON.stringify({item: 'usb-c cable', qty: 20})})"
    )
    browser.until(lambda: len(decide.asked) == 2, "asked again")
    first, second = decide.asked
    assert request_digest(first) != request_digest(second)
    assert [(f.name, f.value) for f in second.fields][1] == ("qty", "20")
    FETCH_POST.act(browser.page)  # the same request again: asked again too (no approval kept)
    browser.until(lambda: len(decide.asked) == 3, "asked a third time")


def test_an_approval_naming_another_request_does_not_let_it_go(browser: Browser) -> None:
    decide = Decider("approved", digest=lambda _: "0" * 64)
    gate = open_page(browser, FORM_ATTRIBUTE, decide)
    FORM_ATTRIBUTE.act(browser.page)
    browser.until(lambda: len(decide.asked) == 1, "asked")
    browser.pump(AFTER_S)
    assert browser.servers.count(FORM_ATTRIBUTE.held[0]) == 0
    (refused,) = gate.take_decisions()
    assert refused.decision.status == "rejected"
    assert "another request" in (refused.decision.note or "")


def test_a_decide_that_raises_refuses_and_says_why(browser: Browser) -> None:
    def broken(request: HeldRequest) -> CommitDecided:
        raise ConnectionError("the daemon is gone")

    gate = open_page(browser, FETCH_POST, broken)
    FETCH_POST.act(browser.page)
    browser.until(lambda: "failed" in browser.page.inner_text("#out"), "the fetch failed")
    assert browser.servers.count(FETCH_POST.held[0]) == 0
    (refused,) = gate.take_decisions()
    assert refused.decision.status == "rejected" and refused.decision.decider == "daemon"
    assert "ConnectionError: the daemon is gone" in (refused.decision.note or "")


def test_an_async_decide_under_the_sync_api_refuses(browser: Browser) -> None:
    async def wrong(request: HeldRequest) -> CommitDecided:
        raise AssertionError("never awaited")

    gate = open_page(browser, FETCH_POST, wrong)  # type: ignore[arg-type]
    FETCH_POST.act(browser.page)
    browser.until(lambda: "failed" in browser.page.inner_text("#out"), "the fetch failed")
    (refused,) = gate.take_decisions()
    assert "SyncSession.commit_check" in (refused.decision.note or "")


def test_coordinates_and_keys_are_held_the_same(browser: Browser) -> None:
    """The gate judges the browser's request, not how it was caused."""
    decide = Decider("rejected")
    open_page(browser, FETCH_POST, decide)
    box = browser.page.locator("#go").bounding_box()
    assert box is not None
    browser.page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    browser.until(lambda: len(decide.asked) == 1, "the coordinate click's POST held")
    browser.page.focus("#go")
    browser.page.keyboard.press("Enter")
    browser.until(lambda: len(decide.asked) == 2, "the key press's POST held")
    browser.pump(AFTER_S)
    assert {r.kind for r in decide.asked} == {"write"}
    assert browser.servers.count(FETCH_POST.held[0]) == 0


def test_a_page_opened_after_attaching_is_held_and_detach_lets_go(browser: Browser) -> None:
    """After detach, nothing is held (a request waiting as it detaches is refused:
    tests/e2e/test_commit_gate_fail_closed.py)."""
    decide = Decider("rejected")
    gate = open_page(browser, MINIWOB_SUBMIT, decide)
    second = browser.context.new_page()
    gate.watch(second)
    gate.watch(second)  # once held, at once
    second.goto(browser.servers.url(FORM_ATTRIBUTE))
    FORM_ATTRIBUTE.act(second)
    browser.until(lambda: len(decide.asked) == 1, "the new page's POST held")
    gate.detach()
    assert not gate.attached
    FORM_ATTRIBUTE.act(second)
    browser.servers.wait_for(FORM_ATTRIBUTE.held[0], pump=browser.pump)
    assert len(decide.asked) == 1


def test_the_gate_refuses_bad_use(browser: Browser) -> None:
    with pytest.raises(GateError, match="callable"):
        CommitGate("yes")  # type: ignore[arg-type]
    gate = CommitGate(Decider())
    with pytest.raises(GateError, match="start_url 'about:blank'"):
        gate.attach(browser.context, start_url="about:blank")
    gate = CommitGate(Decider())
    gate.attach(browser.context, start_url=browser.servers.home)
    with pytest.raises(GateError, match="attached already"):
        gate.attach(browser.context)
    with pytest.raises(GateError, match="an action string or None"):
        gate.trigger(12)  # type: ignore[arg-type]
    gate.trigger("click('1') click('2')")  # not one action: no element
    assert gate._element is None


def test_a_type_the_browser_does_not_show_is_a_held_download(browser: Browser) -> None:
    decide = Decider("rejected")
    gate = open_page(browser, DOWNLOAD, decide)
    browser.page.evaluate("location.href = '/archive'")  # application/zip, no attachment
    browser.until(lambda: len(decide.asked) == 1, "asked")
    browser.pump(AFTER_S)
    assert decide.asked[0].kind == "download" and saved(gate) == []


def test_a_file_pages_origin_is_file(browser: Browser, tmp_path: Path) -> None:
    """Leaving a ``file://`` page for the web is a navigation to another origin; another file
    page is not."""
    there = tmp_path / "there.html"
    there.write_text("<p>there</p>")
    start = tmp_path / "start.html"
    start.write_text(
        f"<a id='file' href='{there.as_uri()}'>file</a>"
        f"<a id='web' href='{browser.servers.home}/landed?via=file'>web</a>"
    )
    decide = Decider("rejected")
    gate = CommitGate(decide)
    gate.attach(browser.context, start_url=start.as_uri())
    assert gate.origin == "file://"
    browser.page.goto(start.as_uri())
    browser.page.click("#file")
    browser.until(lambda: browser.page.url == there.as_uri(), "the file page")
    browser.page.go_back()
    browser.page.click("#web", no_wait_after=True)
    browser.until(lambda: len(decide.asked) == 1, "asked")
    assert decide.asked[0].kind == "navigation"
    assert decide.asked[0].origin == browser.servers.home


def test_the_session_origin_is_the_first_pages(browser: Browser) -> None:
    browser.page.goto(browser.servers.url(GET_SEARCH))
    gate = CommitGate(Decider())
    gate.attach(browser.context)
    assert gate.origin == browser.servers.home


# -- a real daemon: the session's mode decides ---------------------------------------------


def test_a_real_daemon_decides_by_the_sessions_mode(browser: Browser, daemon: Daemon) -> None:
    person = Client(daemon.url, daemon.token, role="monitor", name="test-person")
    person.connect()
    person.pair(daemon.monitor_code, "test-person")
    with Client(daemon.url, daemon.token) as client:
        start = browser.servers.url(FETCH_POST)
        session = client.start_session("order a cable", start_url=start, holds="browser")
        gate = hold_commits(browser.context, session, start_url=start)
        try:
            browser.page.goto(start)
            person.set_mode(session.session_id, "stop")
            gate.trigger("click('go')")
            FETCH_POST.act(browser.page)
            browser.until(lambda: "failed" in browser.page.inner_text("#out"), "refused")
            (stopped,) = gate.take_decisions()
            assert stopped.decision.decider == "mode" and stopped.decision.mode == "stop"
            assert stopped.decision.way_out and stopped.request.trigger == "click('go')"
            assert browser.servers.count(FETCH_POST.held[0]) == 0

            person.set_mode(session.session_id, "watch")
            FETCH_POST.act(browser.page)
            browser.servers.wait_for(FETCH_POST.held[0], pump=browser.pump)
            (watched,) = gate.take_decisions()
            assert watched.decision.status == "approved" and watched.flagged
        finally:
            gate.detach()
            person.close()


def test_with_nobody_paired_ask_is_refused_at_once(browser: Browser, daemon: Daemon) -> None:
    with Client(daemon.url, daemon.token) as client:
        start = browser.servers.url(DOWNLOAD)
        session = client.start_session("export", start_url=start, holds="browser")
        gate = hold_commits(browser.context, session)
        browser.page.goto(start)
        DOWNLOAD.act(browser.page)
        taken: list[CommitDecided] = []
        browser.until(lambda: bool(taken.extend(gate.take_decisions()) or taken), "refused")
        (refused,) = taken
        assert refused.decision.status == "rejected" and refused.decision.decider == "daemon"
        assert refused.request.kind == "download" and "--sandbox-origin" in (
            refused.decision.way_out or ""
        )
        browser.pump(AFTER_S)
        assert saved(gate) == []


def server_url(b: Browser, expected: Expected) -> str:
    base = b.servers.home if expected.server == "home" else b.servers.other
    return base + expected.path


def test_a_gate_attached_after_a_detached_one_decides_alone(browser: Browser) -> None:
    """A detached gate fails closed only while no later gate holds its context (BrowserGym's
    wrapper attaches a new gate when an env resets on the same context)."""
    old = CommitGate(Decider("approved"))
    old.attach(browser.context, start_url=browser.servers.home)
    old.detach()
    decide = Decider("approved")
    open_page(browser, REDIRECT_OUT, decide)
    REDIRECT_OUT.act(browser.page)
    redirected = REDIRECT_OUT.held[0]
    browser.servers.wait_for(redirected, pump=browser.pump)  # the hop the new gate approved
    browser.pump(AFTER_S)
    assert browser.servers.count(redirected) == 1 and len(decide.asked) == 1
    assert old.take_decisions() == []


def test_a_get_the_operator_names_is_held_on_1_44(browser: Browser, tmp_path: Path) -> None:
    """serve --commits on Playwright 1.44 (BrowserGym's): ``hold_commits`` takes the daemon's
    patterns from the session (its caller names none); with nobody paired the named GET is
    refused at once and never arrives, and a GET no pattern names goes unasked."""
    spec = {
        "judge": {"default": [0.5, [1], "ok"]},
        "config": {"commits": ["GET http://127.0.0.1:*/cart/remove*"]},
    }
    with daemon_process(tmp_path / "daemon", spec) as daemon, Client(daemon.url, daemon.token) as c:
        start = f"{browser.servers.home}/escape_get_remove.html"
        session = c.start_session("tidy the cart", start_url=start, holds="browser")
        assert session.commits == ("GET http://127.0.0.1:*/cart/remove*",)
        gate = hold_commits(browser.context, session, start_url=start)
        try:
            browser.page.goto(start)
            browser.page.click("#go", no_wait_after=True)
            taken: list[CommitDecided] = []
            browser.until(lambda: bool(taken.extend(gate.take_decisions()) or taken), "refused")
            ((held, decision),) = [(d.request, d.decision) for d in taken]
            assert (held.method, held.url) == ("GET", f"{browser.servers.home}/cart/remove?id=3")
            assert (decision.status, decision.decider) == ("rejected", "daemon")
            browser.pump(AFTER_S)
            assert browser.servers.count(Expected("GET", "home", "/cart/remove?id=3")) == 0
            browser.page.goto(start)
            browser.page.click("#keep")
            browser.servers.wait_for(Expected("GET", "home", "/cart/view"), pump=browser.pump)
            assert gate.take_decisions() == []
        finally:
            gate.detach()
