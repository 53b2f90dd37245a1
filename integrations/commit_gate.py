"""The browser holds what commits: a Playwright context's requests paused before they leave.

:class:`CommitGate` pauses every request of a Playwright ``BrowserContext`` (sync or async API)
in Chromium's own network stack (the DevTools Fetch domain, one CDP session per page, each page
there and each new one) and asks :func:`webshepherd.protocol.commits.commit_kind` whether it
commits: a method other than GET, HEAD or OPTIONS, a top-level navigation to another origin
than the session's (each redirect hop is paused on its own), or a download (read at the
response: ``Content-Disposition: attachment`` or a type the browser does not show). One that
does becomes a :class:`~webshepherd.protocol.common.HeldRequest` and waits for ``decide``
(in a session: ``session.commit_check``, the daemon's ``commit.check``); it leaves only when
the answer is 'approved' and names that very request (``request_digest``), else it fails as
blocked by the client. Others continue at once. How the request was caused (a click on a bid,
coordinates, a key, a timer) does not matter: the browser's request is what is judged.

    gate = CommitGate(session.commit_check)   # or hold_commits(context, session)
    gate.attach(context)                      # async API: await gate.attach(context)
    gate.trigger("click('12')")               # the action about to run, shown on the card
    ...run the step...
    for decided in gate.take_decisions(): ... # refused ones: decided.decision.status

Sync API: Playwright runs the gate's handlers while the caller is inside a Playwright call (a
request paused while the caller is elsewhere waits for its next one). A decide that raises,
or answers about another request, refuses (fail closed) and is recorded with why. The session
origin is ``start_url``'s when given, else the first page's, else the first top-level
navigation's (``file://`` for file pages).

A page opened after :meth:`CommitGate.attach` is held a moment after it opens
(:meth:`CommitGate.watch` returns once it is): one the page opens (``window.open``) may send its
first request before. Out-of-process frames and service workers are other targets, not held.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, TypeAlias, TypedDict, TypeVar, overload

from webshepherd.daemon.browser.chromium import Steps, drive, drive_async
from webshepherd.protocol.actions import ActionError, parse_action
from webshepherd.protocol.commits import (
    SAFE_METHODS,
    commit_kind,
    held_request,
    request_digest,
    url_origin,
)
from webshepherd.protocol.common import MAX_ACTION_CHARS, DecisionInfo, HeldRequest
from webshepherd.protocol.replies import CommitDecided

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext as AsyncContext
    from playwright.async_api import CDPSession as AsyncCdp
    from playwright.async_api import Page as AsyncPage
    from playwright.sync_api import BrowserContext as SyncContext
    from playwright.sync_api import CDPSession as SyncCdp
    from playwright.sync_api import Page as SyncPage

__all__ = ["CommitGate", "Decide", "GateError"]

#: A Playwright context, page or CDP session of the sync or the async API (the steps of
#: webshepherd.daemon.browser.chromium drive either).
Context: TypeAlias = "SyncContext | AsyncContext"
Page: TypeAlias = "SyncPage | AsyncPage"
Cdp: TypeAlias = "SyncCdp | AsyncCdp"
T = TypeVar("T")

#: Asks about one held request: blocking with Playwright's sync API, a coroutine with the async.
Decide = Callable[[HeldRequest], "CommitDecided | Awaitable[CommitDecided]"]

#: The Fetch patterns: every request before it leaves; documents' and others' responses (a
#: download is known there).
PATTERNS = [
    {"urlPattern": "*", "requestStage": "Request"},
    {"urlPattern": "*", "resourceType": "Document", "requestStage": "Response"},
    {"urlPattern": "*", "resourceType": "Other", "requestStage": "Response"},
]
#: Types a browser shows in a tab (others it saves).
_SHOWN_PREFIXES = ("text/", "image/", "audio/", "video/")
_SHOWN_TYPES = frozenset(
    {
        "",
        "application/xhtml+xml",
        "application/xml",
        "application/json",
        "application/javascript",
        "application/pdf",
        "application/rss+xml",
        "application/atom+xml",
        "multipart/x-mixed-replace",
    }
)
_MAX_ELEMENT = 64
log = logging.getLogger(__name__)
_CLOSED = ("closed", "detached", "Invalid InterceptionId", "No tab", "Target")


class CdpHeader(TypedDict):
    """One header of a paused response (CDP ``Fetch.HeaderEntry``)."""

    name: str
    value: str


class CdpPostData(TypedDict, total=False):
    """One part of a request's body (CDP ``Network.PostDataEntry``: base64)."""

    bytes: str


class _CdpRequestFields(TypedDict):
    url: str
    method: str


class CdpRequest(_CdpRequestFields, total=False):
    """The paused request, as CDP's ``Network.Request`` gives what the gate reads of it."""

    headers: dict[str, str]
    postData: str
    postDataEntries: list[CdpPostData]


class _RequestPausedFields(TypedDict):
    requestId: str
    request: CdpRequest


class RequestPaused(_RequestPausedFields, total=False):
    """CDP's ``Fetch.requestPaused`` event, the fields the gate reads (the response ones only
    at the response stage)."""

    frameId: str
    resourceType: str
    responseErrorReason: str
    responseStatusCode: int
    responseHeaders: list[CdpHeader]


class GateError(RuntimeError):
    """The gate was used wrongly (attached twice, a decide of the wrong kind)."""


class CommitGate:
    """Holds a context's committing requests until ``decide`` approves that exact request.

    ``session_id`` names the session in the refusals the gate makes itself (a decide that
    raised); :func:`webshepherd.integrations.playwright.hold_commits` passes the session's.
    """

    def __init__(self, decide: Decide, *, session_id: str = "local") -> None:
        if not callable(decide):
            raise GateError(f"decide must be callable, not {type(decide).__name__}")
        self._decide = decide
        self.session_id = session_id
        self.origin: str | None = None
        self._trigger: str | None = None
        self._element: str | None = None
        self._decisions: list[CommitDecided] = []
        self._lock = threading.Lock()
        self._context: Context | None = None
        self._async = False
        self._tabs: list[_Tab] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._claimed: set[Page] = set()  # pages attached or being attached
        self._attaching: dict[Page, asyncio.Task[None]] = {}  # async: a new page's attach

    # -- the API ------------------------------------------------------------------------

    @overload
    def attach(self, context: SyncContext, *, start_url: str | None = None) -> None: ...

    @overload
    def attach(self, context: AsyncContext, *, start_url: str | None = None) -> Awaitable[None]: ...

    def attach(self, context: Context, *, start_url: str | None = None) -> Awaitable[None] | None:
        """Hold the requests of every page of ``context`` and of each new one. ``start_url``:
        the session's start page (its origin is the session's). With the async API, await
        the result."""
        if self._context is not None:
            raise GateError("this gate is attached already: detach() it first")
        self._context = context
        self._async = inspect.iscoroutinefunction(context.new_cdp_session)
        if start_url is not None:
            origin = url_origin(start_url)
            if origin is None:
                raise GateError(f"start_url {start_url!r}: not an http(s) or file URL")
            self.origin = origin
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
        """Return once ``page`` is held. The gate attaches to a page opened after
        :meth:`attach` by itself, a moment after it opens (its first requests may leave
        before): wait for this before driving a new page. With the async API, await it."""
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
        """The answers about held requests since the last call, oldest first."""
        with self._lock:
            taken, self._decisions = self._decisions, []
        return taken

    def detach(self) -> Awaitable[None] | None:
        """Stop holding (requests paused now are released by the browser); new pages are no
        longer watched. With the async API, await the result."""
        context, self._context = self._context, None
        tabs, self._tabs = self._tabs, []
        self._claimed.clear()
        self._attaching.clear()
        if context is None:
            return drive_async(_nothing()) if self._async else None
        with contextlib.suppress(KeyError, ValueError):
            context.remove_listener("page", self._on_page)
        steps = _detach_all(tabs)
        if self._async:
            return drive_async(steps)
        drive(steps)
        return None

    @property
    def attached(self) -> bool:
        return self._context is not None

    # -- attaching ----------------------------------------------------------------------

    def _attach_all(self, context: Context) -> Steps[None]:
        pages: list[Page] = list(context.pages)
        for page in pages:
            if self.origin is None:
                self.origin = url_origin(page.url)
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
        self._claimed.add(page)
        # the page is the context's own (one API); mypy pairs each context with either page
        cdp = yield context.new_cdp_session(page)  # type: ignore[arg-type]
        tree = yield cdp.send("Page.getFrameTree")
        tab = _Tab(page, cdp, tree["frameTree"]["frame"]["id"])
        self._tabs.append(tab)
        if self._async:
            cdp.on("Fetch.requestPaused", lambda event: self._spawn(tab, event))
        else:
            cdp.on("Fetch.requestPaused", lambda event: self._run_sync(tab, event))
        yield cdp.send("Fetch.enable", {"patterns": PATTERNS})

    def _spawn(self, tab: _Tab, event: RequestPaused) -> None:
        self._keep(drive_async(self._paused(tab, event)))

    def _keep(self, work: Coroutine[object, object, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _run_sync(self, tab: _Tab, event: RequestPaused) -> None:
        drive(self._paused(tab, event))

    # -- one paused request -------------------------------------------------------------

    def _paused(self, tab: _Tab, event: RequestPaused) -> Steps[None]:
        rid = event["requestId"]
        try:
            request = self._held(tab, event)
        except Exception as exc:  # fail closed: a request the gate cannot read does not leave
            yield from _send(tab, "Fetch.failRequest", rid, errorReason=_refusal(event))
            log.warning("refused a request the gate could not read: %r", exc)
            return
        if request is None:
            yield from _send(tab, "Fetch.continueRequest", rid)
            return
        digest = request_digest(request)
        try:
            answer = yield self._ask(request)
        except Exception as exc:
            name = type(exc).__name__
            decider = "timeout" if isinstance(exc, TimeoutError) else "daemon"
            self._record_refusal(request, f"asking about it failed ({name}: {exc})", decider)
            yield from _send(tab, "Fetch.failRequest", rid, errorReason=_refusal(event))
            return
        if not isinstance(answer, CommitDecided):
            got = type(answer).__name__
            self._record_refusal(request, f"decide returned {got}, not a CommitDecided")
            yield from _send(tab, "Fetch.failRequest", rid, errorReason=_refusal(event))
            return
        if answer.request_digest != digest:
            self._record_refusal(
                request,
                f"the answer was about another request (digest {answer.request_digest[:12]}…, "
                f"this one {digest[:12]}…)",
            )
            yield from _send(tab, "Fetch.failRequest", rid, errorReason=_refusal(event))
            return
        with self._lock:
            self._decisions.append(answer)
        if answer.decision.status == "approved":
            yield from _send(tab, "Fetch.continueRequest", rid)
        else:
            yield from _send(tab, "Fetch.failRequest", rid, errorReason=_refusal(event))

    def _ask(self, request: HeldRequest) -> object:
        """What the steps yield: the answer, or (async API) an awaitable of it."""
        result = self._decide(request)
        if not self._async and inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise GateError(
                "decide returned an awaitable under Playwright's sync API: pass a blocking "
                "decide (SyncSession.commit_check)"
            )
        if self._async and not inspect.isawaitable(result):
            return _ready(result)
        return result

    def _held(self, tab: _Tab, event: RequestPaused) -> HeldRequest | None:
        """The paused request as the wire's HeldRequest when it commits, else None."""
        req = event["request"]
        method = str(req["method"])
        url = str(req["url"])
        response = "responseStatusCode" in event or "responseErrorReason" in event
        top = event.get("resourceType") == "Document" and event.get("frameId") == tab.main_frame
        if self.origin is None:
            self.origin = url_origin(tab.page.url)  # the page the session is on
        if top and not response and self.origin is None and method.upper() in SAFE_METHODS:
            self.origin = url_origin(url)  # the session's first page
            return None
        download = response and _is_download(event)
        if response and not download:
            return None
        kind = commit_kind(
            method,
            url,
            top_level_navigation=top and not response,
            session_origin=self.origin,
            download=download,
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

    def _record_refusal(self, request: HeldRequest, why: str, decider: str = "daemon") -> None:
        info = DecisionInfo.model_validate(
            {
                "status": "rejected",
                "by": "gate",
                "note": f"the browser's gate refused it: {why}",
                "decider": decider,
                "way_out": "a decide that answers (the daemon running, the session open)",
            }
        )
        refused = CommitDecided(
            session_id=self.session_id,
            request=request,
            request_digest=request_digest(request),
            decision=info,
        )
        with self._lock:
            self._decisions.append(refused)


class _Tab:
    """One page, its CDP session and its main frame."""

    def __init__(self, page: Page, cdp: Cdp, main_frame: str) -> None:
        self.page = page
        self.cdp = cdp
        self.main_frame = main_frame


def _send(tab: _Tab, method: str, rid: str, **params: str) -> Steps[None]:
    """A Fetch command about a paused request; a page closed meanwhile is no error."""
    try:
        yield tab.cdp.send(method, {"requestId": rid, **params})
    except Exception as exc:
        if not _closed(exc):
            raise


def _detach_all(tabs: list[_Tab]) -> Steps[None]:
    for tab in tabs:
        try:
            yield tab.cdp.send("Fetch.disable")
            yield tab.cdp.detach()
        except Exception as exc:
            if not _closed(exc):
                raise


def _nothing() -> Steps[None]:
    return
    yield


async def _ready(value: T) -> T:
    return value


def _refusal(event: RequestPaused) -> str:
    """How a refused request fails: a navigation or download as aborted (the page stays where
    it was, as after a cancelled navigation, instead of an error page), others as blocked by
    the client (the page's fetch sees a network error)."""
    if event.get("resourceType") == "Document" or "responseStatusCode" in event:
        return "Aborted"
    return "BlockedByClient"


def _closed(exc: BaseException) -> bool:
    text = str(exc)
    return any(word in text for word in _CLOSED)


def _bid(action: str | None) -> str | None:
    if not action:
        return None
    try:
        bid = parse_action(action).bid
    except ActionError:
        return None
    return bid if bid is not None and len(bid) <= _MAX_ELEMENT else None


def _body(req: CdpRequest) -> bytes | None:
    entries = req.get("postDataEntries")
    if entries:
        return b"".join(base64.b64decode(e.get("bytes", "")) for e in entries)
    data = req.get("postData")
    return data.encode("utf-8") if isinstance(data, str) else None


def _is_download(event: RequestPaused) -> bool:
    status = int(event.get("responseStatusCode") or 0)
    if 300 <= status < 400 or "responseErrorReason" in event:
        return False
    headers = {
        str(h.get("name", "")).lower(): str(h.get("value", ""))
        for h in event.get("responseHeaders") or []
    }
    if headers.get("content-disposition", "").strip().lower().startswith("attachment"):
        return True
    ctype = headers.get("content-type", "").split(";")[0].strip().lower()
    shown = ctype in _SHOWN_TYPES or ctype.startswith(_SHOWN_PREFIXES) or ctype.endswith("+xml")
    return not shown
