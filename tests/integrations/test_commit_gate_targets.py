"""Every target and every download of a gated browser is held (issue 49), under the BrowserGym
pin's Playwright (1.44, sync API) in Debian's Chromium: a POST form and a link opened in a new
tab, a ``window.open`` page posting on load, a cross-site (out-of-process) frame posting, the
``download`` attribute on a type the browser shows, ``data:`` and ``blob:`` downloads (no
request at all); shared and service workers are refused with the reason. Refused, nothing
reaches the recording server and no file is saved; approved, each arrives exactly once. A
WebSocket's handshake (1.44 has no ``route_web_socket``) is asked about before it connects:
refused, the recording socket server sees no connection; approved or in ``watch``, it opens
once (recorded flagged by a real daemon in ``watch``); once the gate detaches, it opens unasked."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from webshepherd.integrations.commit_gate import (
    HANDSHAKE_REFUSED,
    WORKERS_BLOCKED,
    CommitGate,
)
from webshepherd.integrations.playwright import hold_commits
from webshepherd.protocol.client.sync import Client
from webshepherd.protocol.common import CommitKind
from websockets.sync.server import Server, ServerConnection, serve

from tests.fixtures.write_pages import Expected
from tests.integrations.conftest import Daemon
from tests.integrations.test_commit_gate import AFTER_S, Browser, Decider, browser, saved

__all__ = ["browser"]  # the fixture, shared with test_commit_gate


@dataclass(frozen=True)
class Escape:
    """A page whose ``#go`` (or its load, ``click=False``) sends from another target than
    the page, or saves a file: what the gate holds and where it would arrive."""

    name: str
    kind: CommitKind
    held: Expected | None  # the request held (None: a download, its file is what is held)
    download: str | None = None
    click: bool = True
    content: bytes | None = None  # the saved file's bytes, when approved


ESCAPES = (
    Escape("escape_blank_form", "write", Expected("POST", "home", "/api/blank")),
    Escape("escape_blank_link", "navigation", Expected("GET", "other", "/landed?via=blank")),
    Escape("escape_window_open", "write", Expected("POST", "home", "/api/popup")),
    Escape("escape_frame", "write", Expected("POST", "other", "/api/pay"), click=False),
    Escape("escape_download_attr", "download", None, download="notes.html"),
    Escape(
        "escape_data_download",
        "download",
        None,
        download="order.txt",
        content=b"order 1: usb-c cable",
    ),
    Escape(
        "escape_blob_download",
        "download",
        None,
        download="receipt.txt",
        content=b"receipt: usb-c cable",
    ),
)


def open_escape(b: Browser, escape: Escape, decide: Decider) -> CommitGate:
    gate = CommitGate(decide)
    gate.attach(b.context, start_url=b.servers.home)
    b.page.goto(f"{b.servers.home}/{escape.name}.html")
    if escape.click:
        b.servers.clear()
        b.page.click("#go", no_wait_after=True)
    return gate


@pytest.mark.parametrize("escape", ESCAPES, ids=lambda e: e.name)
def test_a_refused_target_or_download_never_arrives(browser: Browser, escape: Escape) -> None:
    decide = Decider("rejected")
    gate = open_escape(browser, escape, decide)
    browser.until(lambda: len(decide.asked) >= 1, f"{escape.name}: asked")
    browser.pump(AFTER_S)
    held = decide.asked[-1]
    assert held.kind == escape.kind, held
    if escape.held is not None:
        assert browser.servers.count(escape.held) == 0, browser.servers.received()
    if escape.download is not None:
        fields = {f.name: f.value for f in held.fields}
        assert fields["file"] == escape.download and fields["size"].endswith(" bytes")
        assert held.page_url == f"{browser.servers.home}/{escape.name}.html"
        assert saved(gate) == [] and gate.saved == []
    refused = gate.take_decisions()
    assert refused and all(d.decision.status == "rejected" for d in refused)
    held_dir = gate._held_dir
    gate.detach()
    assert held_dir is not None and not held_dir.exists()  # nothing kept behind


@pytest.mark.parametrize("escape", ESCAPES, ids=lambda e: e.name)
def test_an_approved_target_or_download_arrives_once(browser: Browser, escape: Escape) -> None:
    decide = Decider("approved")
    gate = open_escape(browser, escape, decide)
    if escape.held is not None:
        browser.servers.wait_for(escape.held, pump=browser.pump)
    if escape.download is not None:
        browser.until(lambda: saved(gate) == [escape.download], f"{escape.name}: saved")
        if escape.content is not None:
            assert (gate.downloads_dir / escape.download).read_bytes() == escape.content
    browser.pump(AFTER_S)
    if escape.held is not None:
        assert browser.servers.count(escape.held) == 1, browser.servers.received()
    assert [r.kind for r in decide.asked] == [escape.kind]
    assert [d.decision.status for d in gate.take_decisions()] == ["approved"]
    gate.detach()


@pytest.mark.parametrize("page", ["escape_shared_worker", "escape_service_worker"])
def test_shared_and_service_workers_are_refused_with_the_reason(
    browser: Browser, page: str
) -> None:
    gate = CommitGate(Decider("approved"))
    gate.attach(browser.context, start_url=browser.servers.home)
    browser.page.goto(f"{browser.servers.home}/{page}.html")
    browser.page.click("#go")
    browser.until(lambda: browser.page.inner_text("#out") != "", "the page's answer")
    browser.pump(AFTER_S)
    assert browser.page.inner_text("#out") == WORKERS_BLOCKED
    assert browser.servers.count(Expected("POST", "home", "/api/worker")) == 0
    gate.detach()


def test_a_get_the_caller_names_is_held_others_go(browser: Browser) -> None:
    decide = Decider("rejected")
    gate = CommitGate(decide, commit_gets=(f"{browser.servers.home}/cart/remove*",))
    gate.attach(browser.context, start_url=browser.servers.home)
    browser.page.goto(f"{browser.servers.home}/escape_get_remove.html")
    browser.page.click("#go", no_wait_after=True)
    browser.until(lambda: len(decide.asked) == 1, "the named GET asked")
    browser.pump(AFTER_S)
    (held,) = decide.asked
    assert (held.method, held.kind) == ("GET", "write")
    assert browser.servers.count(Expected("GET", "home", "/cart/remove?id=3")) == 0
    browser.page.click("#keep")  # a GET no pattern names: not asked
    browser.servers.wait_for(Expected("GET", "home", "/cart/view"), pump=browser.pump)
    assert len(decide.asked) == 1
    gate.detach()


# -- WebSockets: the handshake is held (Playwright 1.44) -------------------------------------


@dataclass
class Sockets:
    """A recording WebSocket server on loopback: each connection's path and each message."""

    server: Server
    opened: list[str] = field(default_factory=list)
    received: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.server.socket.getsockname()[1]}/orders"

    def record(self, connection: ServerConnection) -> None:
        self.opened.append(connection.request.path if connection.request else "?")
        for message in connection:
            self.received.append(str(message))
            connection.send("ok")


@pytest.fixture
def sockets() -> Iterator[Sockets]:
    holder: list[Sockets] = []
    with serve(lambda c: holder[0].record(c), "127.0.0.1", 0) as server:
        holder.append(Sockets(server))
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield holder[0]
        server.shutdown()
        thread.join(5)


def open_socket_page(b: Browser, sockets: Sockets) -> None:
    b.page.goto(f"{b.servers.home}/escape_socket.html?ws={sockets.url}")


@pytest.mark.parametrize("status", ["rejected", "approved"])
def test_a_websocket_handshake_is_asked_about_before_it_connects(
    browser: Browser, sockets: Sockets, status: str
) -> None:
    decide = Decider(status)
    gate = CommitGate(decide)
    gate.attach(browser.context, start_url=browser.servers.home)
    open_socket_page(browser, sockets)
    want = "answered ok" if status == "approved" else f"refused SecurityError: {HANDSHAKE_REFUSED}"
    browser.until(lambda: browser.page.inner_text("#out") == want, f"the page's socket: {want}")
    browser.pump(AFTER_S)
    (held,) = decide.asked
    assert (held.method, held.kind, held.url) == ("WEBSOCKET", "write", sockets.url)
    assert held.fields[0].name == "channel" and "not held" in held.fields[0].value
    assert held.page_url == f"{browser.servers.home}/escape_socket.html?ws={sockets.url}"
    if status == "approved":
        assert sockets.opened == ["/orders"] and sockets.received == ["order=usb-c cable"]
    else:
        assert sockets.opened == [] and sockets.received == []
    assert [d.decision.status for d in gate.take_decisions()] == [status]
    gate.detach()
    if status == "rejected":  # detached: the script stays in the pages, and connects unasked
        browser.page.reload()
        browser.until(lambda: browser.page.inner_text("#out") == "answered ok", "unheld")
        assert len(decide.asked) == 1 and sockets.opened == ["/orders"]


def test_a_real_daemon_refuses_the_handshake_in_stop_and_records_it_in_watch(
    browser: Browser, daemon: Daemon, sockets: Sockets
) -> None:
    person = Client(daemon.url, daemon.token, role="monitor", name="test-person")
    person.connect()
    person.pair(daemon.monitor_code, "test-person")
    with Client(daemon.url, daemon.token) as client:
        start = f"{browser.servers.home}/escape_socket.html?ws={sockets.url}"
        session = client.start_session("order a cable", start_url=start, holds="browser")
        gate = hold_commits(browser.context, session, start_url=start)
        try:
            person.set_mode(session.session_id, "stop")
            browser.page.goto(start)
            browser.until(lambda: "refused" in browser.page.inner_text("#out"), "refused")
            (stopped,) = gate.take_decisions()
            assert stopped.decision.decider == "mode" and stopped.decision.mode == "stop"
            assert stopped.request.method == "WEBSOCKET" and sockets.opened == []

            person.set_mode(session.session_id, "watch")
            browser.page.reload()
            browser.until(lambda: browser.page.inner_text("#out") == "answered ok", "opened")
            (watched,) = gate.take_decisions()
            assert watched.decision.status == "approved" and watched.flagged
            assert watched.decision.mode == "watch" and watched.request.url == sockets.url
            assert sockets.opened == ["/orders"] and sockets.received == ["order=usb-c cable"]
        finally:
            gate.detach()
            person.close()
