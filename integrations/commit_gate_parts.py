"""What the commit gate's modules share (:mod:`webshepherd.integrations.commit_gate`): the
Playwright types of either API, the CDP events the gate reads, its error, one page's session,
and :class:`Holds`, the asking every hold goes through (fail closed: an answer that is not an
approval naming the very request refuses it, recorded with why)."""

from __future__ import annotations

import asyncio
import base64
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, TypedDict, TypeVar

from webshepherd.daemon.browser.chromium import Steps, drive_async
from webshepherd.protocol.actions import ActionError, parse_action
from webshepherd.protocol.commits import request_digest
from webshepherd.protocol.common import DecisionInfo, HeldRequest
from webshepherd.protocol.replies import CommitDecided

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext as AsyncContext
    from playwright.async_api import CDPSession as AsyncCdp
    from playwright.async_api import Page as AsyncPage
    from playwright.async_api import Request as AsyncRequest
    from playwright.async_api import Route as AsyncRoute
    from playwright.async_api import WebSocketRoute as AsyncSocketRoute
    from playwright.sync_api import BrowserContext as SyncContext
    from playwright.sync_api import CDPSession as SyncCdp
    from playwright.sync_api import Page as SyncPage
    from playwright.sync_api import Request as SyncRequest
    from playwright.sync_api import Route as SyncRoute
    from playwright.sync_api import WebSocketRoute as SyncSocketRoute

__all__ = ["Decide", "GateError", "Holds"]

#: A Playwright context, page, CDP session, route or request of the sync or the async API (the
#: steps of webshepherd.daemon.browser.chromium drive either).
Context: TypeAlias = "SyncContext | AsyncContext"
Page: TypeAlias = "SyncPage | AsyncPage"
Cdp: TypeAlias = "SyncCdp | AsyncCdp"
Route: TypeAlias = "SyncRoute | AsyncRoute"
Request: TypeAlias = "SyncRequest | AsyncRequest"
SocketRoute: TypeAlias = "SyncSocketRoute | AsyncSocketRoute"
T = TypeVar("T")

#: Asks about one held request: blocking with Playwright's sync API, a coroutine with the async.
Decide = Callable[[HeldRequest], "CommitDecided | Awaitable[CommitDecided]"]

_MAX_ELEMENT = 64
log = logging.getLogger("webshepherd.integrations.commit_gate")
_CLOSED = ("closed", "detached", "Invalid InterceptionId", "No tab", "Target", "handled")


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
    """CDP's ``Fetch.requestPaused`` event, the fields the gate reads."""

    frameId: str
    resourceType: str
    redirectedRequestId: str


class GateError(RuntimeError):
    """The gate was used wrongly (attached twice, a decide of the wrong kind)."""


class Holds:
    """The state every hold reads and the one way each asks (:meth:`_decided`); the gate
    (:class:`~webshepherd.integrations.commit_gate.CommitGate`) sets it all."""

    session_id: str
    _decide: Decide
    _async: bool
    _context: Context | None
    _trigger: str | None
    _element: str | None
    _decisions: list[CommitDecided]
    _lock: threading.Lock
    _tabs: list[_Tab]
    _tasks: set[asyncio.Task[None]]
    _asking: set[asyncio.Future[object]]  # async: asks waiting for decide
    _lost: str | None  # why the gate can no longer let anything go

    def _decided(self, request: HeldRequest) -> Steps[bool]:
        """Ask about ``request``; True only for an approval naming it. Every refusal the gate
        makes itself is recorded with why."""
        digest = request_digest(request)
        if self._lost is not None:
            self._record_refusal(request, self._lost)
            return False
        try:
            answer = yield self._ask(request)
        except Exception as exc:
            name = type(exc).__name__
            decider = "timeout" if isinstance(exc, TimeoutError) else "daemon"
            self._record_refusal(request, f"asking about it failed ({name}: {exc})", decider)
            return False
        if not isinstance(answer, CommitDecided):
            got = type(answer).__name__
            self._record_refusal(request, f"decide returned {got}, not a CommitDecided")
            return False
        if answer.request_digest != digest:
            self._record_refusal(
                request,
                f"the answer was about another request (digest {answer.request_digest[:12]}…, "
                f"this one {digest[:12]}…)",
            )
            return False
        if self._lost is not None:  # answered after the gate let go of the context
            self._record_refusal(request, self._lost)
            return False
        with self._lock:
            self._decisions.append(answer)
        return answer.decision.status == "approved"

    def _ask(self, request: HeldRequest) -> object:
        """What the steps yield: the answer, or (async API) an awaitable of it that
        :meth:`detach` can end."""
        result = self._decide(request)
        if not self._async and inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise GateError(
                "decide returned an awaitable under Playwright's sync API: pass a blocking "
                "decide (SyncSession.commit_check)"
            )
        if not self._async:
            return result
        if not inspect.isawaitable(result):
            return _ready(result)
        return self._guarded(result)

    async def _guarded(self, result: Awaitable[object]) -> object:
        asking: asyncio.Future[object] = asyncio.ensure_future(result)
        self._asking.add(asking)
        try:
            return await asking
        except asyncio.CancelledError:
            if asking.cancelled() and self._lost is not None:
                raise GateError(self._lost) from None
            raise
        finally:
            self._asking.discard(asking)

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

    def _spawn(self, steps: Steps[None]) -> None:
        self._keep(drive_async(steps))

    def _keep(self, work: Coroutine[object, object, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


class _Tab:
    """One page, the gate's CDP session on it, its target and browser context."""

    def __init__(self, page: Page, cdp: Cdp, target: str, browser_context: str | None) -> None:
        self.page = page
        self.cdp = cdp
        self.target = target
        self.browser_context = browser_context
        self.paused: set[str] = set()  # redirect hops waiting for an answer

    def downloads(self, behavior: str, folder: Path | None) -> dict[str, object]:
        """``Browser.setDownloadBehavior``'s parameters for this page's browser context."""
        params: dict[str, object] = {"behavior": behavior, "eventsEnabled": True}
        if folder is not None:
            params["downloadPath"] = str(folder)
        if self.browser_context:
            params["browserContextId"] = self.browser_context
        return params


def _settle(route: Route, refusal: str | None) -> Steps[None]:
    """Let the route go (``refusal`` None) or fail it; a page closed meanwhile is no error."""
    try:
        if refusal is None:
            yield route.continue_()
        else:
            yield route.abort(refusal)
    except Exception as exc:
        if not _closed(exc):
            raise


def _fetch(tab: _Tab, method: str, params: dict[str, str]) -> Steps[None]:
    """A Fetch command about a paused request; a page closed meanwhile is no error."""
    try:
        yield tab.cdp.send(method, params)
    except Exception as exc:
        if not _closed(exc):
            raise


def _failed(rid: str, reason: str) -> dict[str, str]:
    return {"requestId": rid, "errorReason": reason}


def _body(req: CdpRequest) -> bytes | None:
    entries = req.get("postDataEntries")
    if entries:
        return b"".join(base64.b64decode(e.get("bytes", "")) for e in entries)
    data = req.get("postData")
    return data.encode("utf-8") if isinstance(data, str) else None


def _nothing() -> Steps[None]:
    return
    yield


async def _ready(value: T) -> T:
    return value


def _frame(request: Request) -> object:
    """The request's frame; None for a new page's first navigation (no frame yet) or a
    service worker's request."""
    try:
        return request.frame
    except Exception:
        return None


def _page_url(frame: object) -> str | None:
    try:
        url = frame.page.url  # type: ignore[attr-defined]
    except Exception:
        return None
    return str(url) or None


def _refusal(request: Request) -> str:
    """How a refused request fails: a navigation as aborted (the page stays where it was, as
    after a cancelled navigation, instead of an error page), others as blocked by the client
    (the page's fetch sees a network error)."""
    return "aborted" if request.is_navigation_request() else "blockedbyclient"


def _service_worker_script(request: Request) -> bool:
    headers = request.headers
    return str(headers.get("service-worker", "")).lower() == "script"


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
