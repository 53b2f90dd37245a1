"""The browser holds what commits: a Playwright context's requests paused before they leave.

:class:`CommitGate` holds every request of a Playwright ``BrowserContext`` (sync or async API)
through the context's own route (``context.route``): Playwright installs it in each target
before the target runs, so a page the page opens (a ``target=_blank`` form or link,
``window.open``), an out-of-process frame, a dedicated worker and (Playwright 1.5x+) a service
worker are held from their first request. It asks
:func:`webshepherd.protocol.commits.commit_kind` whether a request commits: a method other than
GET, HEAD or OPTIONS, a top-level navigation to another origin than the session's (each
redirect hop on its own), or a GET that the daemon's operator named (``serve --commits``: the
daemon decides those, so every other GET is asked about only when it matches a pattern the
gate was given). One that does becomes a :class:`~webshepherd.protocol.common.HeldRequest` and
waits for ``decide`` (in a session: ``session.commit_check``, the daemon's ``commit.check``);
it leaves only when the answer is 'approved' and names that very request
(``request_digest``), else it fails as blocked by the client. Others continue at once. How
the request was caused (a click on a bid, coordinates, a key, a timer) does not matter.

Downloads of every kind (an attachment, the ``download`` attribute on any type, ``data:`` and
``blob:`` URLs, which make no request) are saved by Chromium into the gate's private folder
(``Browser.setDownloadBehavior``; 0700, removed at :meth:`CommitGate.detach`), never where
the caller looks; once the file is complete the gate asks about it (the card's fields: the
file's name, type and size, and the page it came from) and moves it to ``downloads_dir`` only
when approved (:attr:`CommitGate.saved`). Playwright's own ``Download`` objects of a gated
context never get a file. Shared workers and service worker registrations are refused in a
gated context (:data:`WORKERS_BLOCKED` says why in the page), since no driver holds a shared
worker's requests. On Playwright 1.48+ each message a page sends on a WebSocket is held like a
request (``context.route_web_socket``; method ``WEBSOCKET``, the message as its field);
refused, the page's socket closes with 1008 (:data:`SOCKET_REFUSED`). Playwright 1.44 has no
such route: there each ``new WebSocket(url)`` in a page's frames waits while the gate asks about
its handshake, connecting only when approved (refused, the constructor throws
:data:`HANDSHAKE_REFUSED`; in ``watch`` it opens, recorded flagged), and its messages then leave
unheld (:mod:`webshepherd.integrations.commit_gate_sockets`).

    gate = CommitGate(session.commit_check)   # or hold_commits(context, session)
    gate.attach(context)                      # async API: await gate.attach(context)
    gate.trigger("click('12')")               # the action about to run, shown on the card
    ...run the step...
    for decided in gate.take_decisions(): ... # refused ones: decided.decision.status

Sync API: Playwright runs the gate's handlers while the caller is inside a Playwright call (a
request paused while the caller is elsewhere waits for its next one). A decide that raises
(the daemon gone, the connection dropped, the session ended), answers about another request,
or is still waiting when the gate is detached refuses (fail closed), recorded with why: a
paused request is never let go because its decider went away. The session origin is
``start_url``'s when given, else the first page's, else the first top-level navigation's
(``file://`` for file pages).

A route the caller adds later, or a page's own route that continues a request rather than
falling back (``route.fallback``), runs before the gate's and takes that request past it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import shutil
import tempfile
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, overload

from webshepherd.daemon.browser.chromium import Steps, drive, drive_async
from webshepherd.integrations.commit_gate_downloads import DownloadHolds
from webshepherd.integrations.commit_gate_parts import (
    Context,
    Decide,
    GateError,
    Page,
    Request,
    RequestPaused,
    Route,
    _bid,
    _body,
    _closed,
    _failed,
    _fetch,
    _frame,
    _nothing,
    _page_url,
    _refusal,
    _service_worker_script,
    _settle,
    _Tab,
    log,
)
from webshepherd.integrations.commit_gate_sockets import (
    HANDSHAKE_REFUSED,
    HOLD_HANDSHAKES,
    SOCKET_ASK,
    SOCKET_REFUSED,
    SocketHolds,
    _asks_socket,
    _every,
    _open_unasked,
)
from webshepherd.protocol.commits import SAFE_METHODS, commit_kind, held_request, url_origin
from webshepherd.protocol.common import MAX_ACTION_CHARS, HeldRequest
from webshepherd.protocol.replies import CommitDecided

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext as AsyncContext
    from playwright.async_api import Page as AsyncPage
    from playwright.sync_api import BrowserContext as SyncContext
    from playwright.sync_api import Page as SyncPage

__all__ = [
    "HANDSHAKE_REFUSED",
    "SOCKET_REFUSED",
    "WORKERS_BLOCKED",
    "CommitGate",
    "Decide",
    "GateError",
]


#: The route's pattern: every request of every target of the context.
PATTERN = "**/*"
#: Why a page of a gated context cannot start a shared or service worker (the page's error).
WORKERS_BLOCKED = (
    "webshepherd: shared and service workers are blocked in a browser whose requests are held "
    "(no driver holds a shared worker's requests before they leave)"
)
#: Run in every frame before the page's scripts: the page's SharedWorker constructor and
#: serviceWorker.register refuse, with the reason.
_BLOCK_WORKERS = (
    "(() => { const why = " + json.dumps(WORKERS_BLOCKED) + ";"
    " const refuse = () => { throw new DOMException(why, 'SecurityError'); };"
    " try { Object.defineProperty(globalThis, 'SharedWorker', {value: function SharedWorker()"
    " { refuse(); }, writable: false, configurable: false}); } catch (e) {}"
    " try { if (globalThis.ServiceWorkerContainer) Object.defineProperty("
    "ServiceWorkerContainer.prototype, 'register', {value: function register()"
    " { return Promise.reject(new DOMException(why, 'SecurityError')); },"
    " writable: false, configurable: false}); } catch (e) {} })();"
)


class CommitGate(SocketHolds, DownloadHolds):
    """Holds a context's committing requests and downloads until ``decide`` approves each.

    ``session_id`` names the session in the refusals the gate makes itself (a decide that
    raised); :func:`webshepherd.integrations.playwright.hold_commits` passes the session's.
    ``downloads_dir``: where an approved download is moved (default: a folder the gate makes,
    :attr:`downloads_dir`). ``commit_gets``: URL patterns (``*`` any run of characters) whose
    GETs are asked about too; the operator's (``serve --commits``, ``session.started.commits``)
    are read from the session whose ``commit_check`` is ``decide`` (protocol/commits.py matches).
    """

    def __init__(
        self,
        decide: Decide,
        *,
        session_id: str = "local",
        downloads_dir: str | Path | None = None,
        commit_gets: tuple[str, ...] = (),
    ) -> None:
        if not callable(decide):
            raise GateError(f"decide must be callable, not {type(decide).__name__}")
        self._decide = decide
        self.session_id = session_id
        self.origin: str | None = None
        self.commit_gets = tuple(commit_gets)
        operator = getattr(getattr(decide, "__self__", None), "commits", ())  # a session's
        self.commits = tuple(f"GET {p}" for p in self.commit_gets) + tuple(operator)
        self._trigger = None
        self._element = None
        self._decisions = []
        self._lock = threading.Lock()
        self._context = None
        self._async = False
        self._tabs = []
        self._tasks = set()
        self._claimed: set[Page] = set()  # pages attached or being attached
        self._attaching: dict[Page, asyncio.Task[None]] = {}  # async: a new page's attach
        self._asking = set()
        self._waiting = {}
        self._lost = None
        self._downloads_dir = Path(downloads_dir) if downloads_dir is not None else None
        self._held_dir = None
        self._downloads = {}
        self._route: Callable[..., object] = self._on_route_sync
        self.saved = []

    # -- the API ------------------------------------------------------------------------

    @overload
    def attach(self, context: SyncContext, *, start_url: str | None = None) -> None: ...

    @overload
    def attach(self, context: AsyncContext, *, start_url: str | None = None) -> Awaitable[None]: ...

    def attach(self, context: Context, *, start_url: str | None = None) -> Awaitable[None] | None:
        """Hold the requests and downloads of every target of ``context``, present and new.
        ``start_url``: the session's start page (its origin is the session's). With the async
        API, await the result."""
        if self._context is not None:
            raise GateError("this gate is attached already: detach() it first")
        origin = None
        if start_url is not None:
            origin = url_origin(start_url)
            if origin is None:
                raise GateError(f"start_url {start_url!r}: not an http(s) or file URL")
            self.origin = origin
        self._context = context
        self._lost = None
        self._async = inspect.iscoroutinefunction(context.route)
        self._route = self._on_route_async if self._async else self._on_route_sync
        self._held_dir = Path(tempfile.mkdtemp(prefix="webshepherd-held-"))
        steps = self._attach_all(context)
        if self._async:
            return drive_async(steps)
        drive(steps)
        return None

    def trigger(self, action: str | None) -> None:
        """The action about to run (a BrowserGym action string; None: the page acts on its
        own): requests held from now on name it, and its bid when it parses."""
        if action is not None and not isinstance(action, str):
            raise GateError(f"trigger: an action string or None, not {type(action).__name__}")
        if action is not None and len(action) > MAX_ACTION_CHARS:
            action = action[: MAX_ACTION_CHARS - 1] + "…"
        self._trigger = action
        self._element = _bid(action)

    @overload
    def watch(self, page: SyncPage) -> None: ...

    @overload
    def watch(self, page: AsyncPage) -> Awaitable[None]: ...

    def watch(self, page: Page) -> Awaitable[None] | None:
        """Return once the gate has its own session on ``page``. Its requests are held from
        the first (the context's route); downloads are held context-wide once the gate has
        any page's session: with a context that had no page at :meth:`attach`, wait for
        this before driving the first page. With the async API, await it."""
        if self._context is None:
            raise GateError("this gate is not attached: attach(context) first")
        if self._async:
            return self._watch_async(self._context, page)
        if page not in self._claimed:
            drive(self._attach_page(self._context, page))
        for _ in range(500):  # the page's own handler is attaching it: let Playwright run
            if any(tab.page is page for tab in self._tabs):
                return None
            page.wait_for_timeout(10)
        raise GateError("the page was not attached within 5 s")

    async def _watch_async(self, context: Context, page: Page) -> None:
        if page not in self._claimed:
            self._attaching[page] = self._keep(drive_async(self._attach_page(context, page)))
        task = self._attaching.get(page)
        if task is not None:
            await task

    def take_decisions(self) -> list[CommitDecided]:
        """The answers about held requests and downloads since the last call, oldest first."""
        with self._lock:
            taken, self._decisions = self._decisions, []
        return taken

    def detach(self) -> Awaitable[None] | None:
        """Stop holding. A request, redirect hop, WebSocket message or download still waiting
        for its answer is refused, never let go (recorded with why), and so is one the browser
        paused that the gate's handlers see while it detaches; then the route and the gate's
        page sessions go, and the context's downloads are refused from now on (Playwright's
        own download folder cannot be restored). With the async API, await the result."""
        context, self._context = self._context, None
        tabs, self._tabs = self._tabs, []
        self._claimed.clear()
        self._attaching.clear()
        if context is None:
            return drive_async(_nothing()) if self._async else None
        self._lost = "the gate was detached: nothing it held can be let go"
        for asking in list(self._asking):
            asking.cancel()
        with contextlib.suppress(KeyError, ValueError):
            context.remove_listener("page", self._on_page)
        for download in list(self._downloads.values()):
            self._record_refusal(download.request(0), self._lost)
        self._downloads.clear()
        held, self._held_dir = self._held_dir, None
        waiting, self._waiting = dict(self._waiting), {}
        steps = self._detach_all(context, tabs, held, waiting)
        if self._async:
            return drive_async(steps)
        drive(steps)
        return None

    @property
    def attached(self) -> bool:
        return self._context is not None

    # -- attaching ----------------------------------------------------------------------

    def _attach_all(self, context: Context) -> Steps[None]:
        yield context.add_init_script(script=_BLOCK_WORKERS)
        yield context.route(PATTERN, self._route)
        if hasattr(context, "route_web_socket"):  # Playwright 1.48+: each message is held
            yield context.route_web_socket(_every, self._on_socket)
        else:  # Playwright 1.44: each handshake is (in the pages' frames)
            yield context.add_init_script(script=HOLD_HANDSHAKES)
        pages: list[Page] = list(context.pages)
        for page in pages:
            if self.origin is None:
                self.origin = url_origin(page.url)
            try:
                yield page.evaluate(_BLOCK_WORKERS)  # a page already open: its main frame
                if not hasattr(context, "route_web_socket"):
                    yield page.evaluate(HOLD_HANDSHAKES)
            except Exception as exc:
                if not _closed(exc):
                    log.info("could not block workers in an open page: %s", exc)
            yield from self._attach_page(context, page)
        context.on("page", self._on_page)

    def _on_page(self, page: Page) -> None:
        if self._context is None or page in self._claimed:
            return None
        steps = self._attach_page(self._context, page)
        if self._async:
            self._attaching[page] = self._keep(drive_async(steps))
            return None
        try:
            drive(steps)
        except Exception as exc:  # the page closed as it opened
            if not _closed(exc):
                raise
        return None

    def _attach_page(self, context: Context, page: Page) -> Steps[None]:
        """The gate's own session on a page: the context's downloads go to the held folder
        (set again from each page's session: while any page is open, one holds it)."""
        self._claimed.add(page)
        # the page is the context's own (one API); mypy pairs each context with either page
        cdp = yield context.new_cdp_session(page)  # type: ignore[arg-type]
        info = yield cdp.send("Target.getTargetInfo")
        target = info["targetInfo"]
        tab = _Tab(page, cdp, str(target["targetId"]), target.get("browserContextId"))
        self._tabs.append(tab)
        cdp.on("Browser.downloadWillBegin", self._download_begins)
        if self._async:
            cdp.on("Browser.downloadProgress", lambda e: self._spawn(self._download_moves(e)))
            cdp.on("Fetch.requestPaused", lambda e: self._spawn(self._redirected(tab, e)))
        else:
            cdp.on("Browser.downloadProgress", lambda e: drive(self._download_moves(e)))
            cdp.on("Fetch.requestPaused", lambda e: drive(self._redirected(tab, e)))
        if self._held_dir is not None:
            downloads = tab.downloads("allowAndName", self._held_dir)
            yield cdp.send("Browser.setDownloadBehavior", downloads)
        yield cdp.send(
            "Fetch.enable", {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}
        )

    def _detach_all(
        self, context: Context, tabs: list[_Tab], held: Path | None, waiting: dict[Route, str]
    ) -> Steps[None]:
        """Fail what waits, then let go: removing the route or disabling Fetch would release
        what they pause, so what is paused is failed first (the sync API's handlers run
        during these calls, and refuse: the gate is lost)."""
        for route, code in waiting.items():
            yield from _settle(route, code)
        for tab in tabs:
            try:
                yield tab.cdp.send("Browser.setDownloadBehavior", tab.downloads("deny", None))
                for rid in list(tab.paused):
                    yield tab.cdp.send("Fetch.failRequest", _failed(rid, "BlockedByClient"))
                yield tab.cdp.send("Fetch.disable")
                yield tab.cdp.detach()
            except Exception as exc:
                if not _closed(exc):
                    raise
        try:
            yield context.unroute(PATTERN, self._route)
            if not hasattr(context, "route_web_socket"):  # 1.44: the handshake script stays
                yield context.route(_asks_socket, _open_unasked)  # in the pages: unheld now
        except Exception as exc:
            if not _closed(exc):
                raise
        if held is not None:
            shutil.rmtree(held, ignore_errors=True)

    # -- one request ----------------------------------------------------------------------

    def _on_route_sync(self, route: Route, request: Request) -> None:
        drive(self._routed(route, request))

    async def _on_route_async(self, route: Route, request: Request) -> None:
        await drive_async(self._routed(route, request))

    def _routed(self, route: Route, request: Request) -> Steps[None]:
        code = _refusal(request)
        if request.url.startswith(SOCKET_ASK):  # the handshake script asks (Playwright 1.44)
            yield from self._handshake(route, request)
            return
        try:
            if _service_worker_script(request):
                log.warning(
                    "refused a service worker's script %s: %s", request.url, WORKERS_BLOCKED
                )
                yield from _settle(route, code)
                return
            held = self._held(request)
        except Exception as exc:  # fail closed: a request the gate cannot read does not leave
            log.warning("refused a request the gate could not read: %r", exc)
            yield from _settle(route, code)
            return
        if held is None:
            yield from _settle(route, None)
            return
        self._waiting[route] = code
        try:
            approved = yield from self._decided(held)
        finally:
            self._waiting.pop(route, None)
        yield from _settle(route, None if approved else code)

    def _held(self, request: Request) -> HeldRequest | None:
        """The request as the wire's HeldRequest when it commits, else None."""
        method = request.method.upper()
        url = request.url
        frame = _frame(request)
        navigation = request.is_navigation_request()
        # a new page's first navigation has no frame yet: it is that page's own
        top = navigation and (frame is None or getattr(frame, "parent_frame", None) is None)
        page_url = _page_url(frame)
        if self.origin is None and page_url:
            self.origin = url_origin(page_url)  # the page the session is on
        if top and self.origin is None and method in SAFE_METHODS:
            self.origin = url_origin(url)  # the session's first page
            return None
        kind = commit_kind(
            method, url, top_level_navigation=top, session_origin=self.origin, commits=self.commits
        )
        if kind is None:
            return None
        headers = {str(k).lower(): str(v) for k, v in request.headers.items()}
        return held_request(
            method,
            url,
            kind,
            top_level=top,
            body=request.post_data_buffer,
            content_type=headers.get("content-type"),
            page_url=page_url,
            trigger=self._trigger,
            element=self._element,
        )

    def _redirected(self, tab: _Tab, event: RequestPaused) -> Steps[None]:
        """A redirect hop (Playwright's route sees only a request's first hop): judged on its
        own; every other request was the route's and goes on."""
        rid = event["requestId"]
        if not event.get("redirectedRequestId"):
            yield from _fetch(tab, "Fetch.continueRequest", {"requestId": rid})
            return
        failed = _failed(
            rid, "Aborted" if event.get("resourceType") == "Document" else "BlockedByClient"
        )
        tab.paused.add(rid)
        try:
            try:
                held = self._hop(tab, event)
            except Exception as exc:  # fail closed
                log.warning("refused a redirect the gate could not read: %r", exc)
                yield from _fetch(tab, "Fetch.failRequest", failed)
                return
            approved = held is None or (yield from self._decided(held))
            if approved:
                yield from _fetch(tab, "Fetch.continueRequest", {"requestId": rid})
            else:
                yield from _fetch(tab, "Fetch.failRequest", failed)
        finally:
            tab.paused.discard(rid)

    def _hop(self, tab: _Tab, event: RequestPaused) -> HeldRequest | None:
        req = event["request"]
        method, url = str(req["method"]).upper(), str(req["url"])
        top = event.get("resourceType") == "Document" and event.get("frameId") == tab.target
        kind = commit_kind(
            method, url, top_level_navigation=top, session_origin=self.origin, commits=self.commits
        )
        if kind is None:
            return None
        headers = {str(k).lower(): str(v) for k, v in (req.get("headers") or {}).items()}
        return held_request(
            method,
            url,
            kind,
            top_level=top,
            body=_body(req),
            content_type=headers.get("content-type"),
            page_url=tab.page.url or None,
            trigger=self._trigger,
            element=self._element,
        )
