"""A Playwright page as the judge sees it: the extension's own capture, from Python.

:func:`launch` opens Chromium with the built extension loaded (a persistent context: the
extension's capture needs one); :func:`page_observation` turns a page of that context into an
:class:`~webshepherd.protocol.Observation` whose AX-tree text is the one the extension sends
the daemon, byte for byte (BrowserGym's ``flatten_axtree_to_str``, the same code path as
``webshepherd observe``). Both take Playwright's sync or async objects: with the async API,
await what they return.

    from playwright.sync_api import sync_playwright
    from webshepherd.integrations.playwright import launch, page_observation

    with sync_playwright() as pw:
        context = launch(pw)                 # Chromium + the extension (not paired: capture only)
        page = context.new_page()
        page.goto("https://example.com")
        observation = page_observation(page)  # url, axtree (elements marked by bid)

The capture leaves each element's ``bid`` attribute in the page, so ``page.click('[bid="12"]')``
runs a BrowserGym action's target. The extension is not paired with a daemon here; pairing it
(options page) adds its overlay, which :func:`launch` does not need.

:func:`hold_commits` makes the browser hold what commits (a write, a navigation to another
origin, a download, a GET the caller names) until the session's daemon lets that very request
go (``commit.check``: the session's mode decides, a paired person in 'ask'), in every page,
frame and worker of the context from its first request; an approved download is moved to the
gate's ``downloads_dir``. Any Chromium context works, with or without the extension:

    session = client.start_session("buy a cable", start_url=url, holds="browser")
    gate = hold_commits(context, session, start_url=url)   # async API: await it
    gate.trigger("click('12')")       # the action about to run, named on the person's card
    page.click('[bid="12"]')
    refused = [d for d in gate.take_decisions() if d.decision.status != "approved"]
"""

from __future__ import annotations

import base64
import inspect
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, overload

from webshepherd.daemon.browser.chromium import (
    DEFAULT_DIST,
    READY_TIMEOUT_S,
    CaptureError,
    Steps,
    capture_steps,
    drive,
    drive_async,
    find_chromium,
    launch_args,
    ready_steps,
    worker_message,
)
from webshepherd.daemon.extension_id import EXTENSION_ID
from webshepherd.integrations.commit_gate import CommitGate
from webshepherd.protocol.common import Observation, Screenshot

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext as AsyncContext
    from playwright.async_api import Page as AsyncPage
    from playwright.async_api import Playwright as AsyncPlaywright
    from playwright.async_api import Worker as AsyncWorker
    from playwright.sync_api import BrowserContext as SyncContext
    from playwright.sync_api import Page as SyncPage
    from playwright.sync_api import Playwright as SyncPlaywright
    from playwright.sync_api import Worker as SyncWorker
    from webshepherd.protocol.client.session import SessionHandle
    from webshepherd.protocol.client.sync import SyncSession

#: Playwright's objects of the sync or the async API (the shared steps drive either).
Context: TypeAlias = "SyncContext | AsyncContext"
Page: TypeAlias = "SyncPage | AsyncPage"

__all__ = ["CaptureError", "CommitGate", "hold_commits", "launch", "page_observation"]

#: The extension's pages and its service worker have URLs under this (then its pinned id).
_WORKER_PREFIX = "chrome-extension://"


@overload
def launch(
    playwright: SyncPlaywright,
    *,
    headless: bool = ...,
    chromium: str | None = ...,
    extension: str | Path = ...,
    user_data_dir: str | Path | None = ...,
    **options: Any,
) -> SyncContext: ...


@overload
def launch(
    playwright: AsyncPlaywright,
    *,
    headless: bool = ...,
    chromium: str | None = ...,
    extension: str | Path = ...,
    user_data_dir: str | Path | None = ...,
    **options: Any,
) -> Awaitable[AsyncContext]: ...


def launch(
    playwright: SyncPlaywright | AsyncPlaywright,
    *,
    headless: bool = True,
    chromium: str | None = None,
    extension: str | Path = DEFAULT_DIST,
    user_data_dir: str | Path | None = None,
    **options: Any,  # launch_persistent_context's own keywords, passed on as they are
) -> Context | Awaitable[Context]:
    """A persistent Chromium context with the extension loaded and ready.

    ``playwright`` is what ``sync_playwright()`` or ``async_playwright()`` gives; with the async
    one, await the result. ``chromium``: the browser binary (default: ``chromium`` on PATH; no
    ``playwright install`` needed). ``user_data_dir``: the profile (default: a temporary one,
    removed when the context closes). Other keywords go to ``launch_persistent_context``
    (``args`` are added after the extension's).
    """
    dist = Path(extension)
    if not (dist / "manifest.json").exists():
        raise CaptureError(
            f"no built extension in {dist}: run `make extension` "
            "(or cd extension && npm ci && npm run build)"
        )
    binary = chromium or find_chromium()
    if binary is None:
        raise CaptureError(
            "Chromium not found: install it (apt-get install chromium) or pass chromium=PATH"
        )
    profile = str(user_data_dir or "")  # "": Playwright's own temporary profile
    options["args"] = [*launch_args(dist), *options.get("args", [])]
    options.setdefault("viewport", {"width": 1280, "height": 720})
    steps = _launch(playwright, profile, binary, headless, options)
    return (
        drive_async(steps)
        if _is_async(playwright.chromium.launch_persistent_context)
        else drive(steps)
    )


@overload
def page_observation(
    page: SyncPage, *, flags: str = ..., screenshot: bool = ...
) -> Observation: ...


@overload
def page_observation(
    page: AsyncPage, *, flags: str = ..., screenshot: bool = ...
) -> Awaitable[Observation]: ...


def page_observation(
    page: Page, *, flags: str = "default", screenshot: bool = False
) -> Observation | Awaitable[Observation]:
    """The page as the daemon would receive it from the extension: an ``Observation``.

    ``page`` is a sync or async Playwright ``Page`` of a context with the extension (see
    :func:`launch`); with an async page, await the result. ``flags``: ``"default"`` (what the
    model was trained on) or ``"visible"`` (AgentLab's visible/clickable flags). ``screenshot``
    adds a PNG of the viewport, for a judge run with ``--judge-inputs text+image``.
    """
    if flags not in ("default", "visible"):
        raise ValueError(f"flags: 'default' or 'visible', not {flags!r}")
    steps = _observe(page, flags, screenshot)
    return drive_async(steps) if _is_async(page.evaluate) else drive(steps)


@overload
def hold_commits(
    context: SyncContext,
    session: SyncSession,
    *,
    start_url: str | None = ...,
    downloads_dir: str | Path | None = ...,
    commit_gets: tuple[str, ...] = ...,
) -> CommitGate: ...


@overload
def hold_commits(
    context: AsyncContext,
    session: SessionHandle,
    *,
    start_url: str | None = ...,
    downloads_dir: str | Path | None = ...,
    commit_gets: tuple[str, ...] = ...,
) -> Awaitable[CommitGate]: ...


def hold_commits(
    context: Context,
    session: SyncSession | SessionHandle,
    *,
    start_url: str | None = None,
    downloads_dir: str | Path | None = None,
    commit_gets: tuple[str, ...] = (),
) -> CommitGate | Awaitable[CommitGate]:
    """A :class:`~webshepherd.integrations.commit_gate.CommitGate` attached to ``context``
    that asks ``session`` (``SyncSession``, or with the async API a ``SessionHandle``: await
    the result) about every request that would commit. ``start_url``: the session's start
    page (its origin is the session's; default: the context's first page's).
    ``downloads_dir``: where approved downloads go (default: a folder the gate makes);
    ``commit_gets``: URL patterns (``*``: any run) of GETs that commit on the sites at hand."""
    gate = CommitGate(
        session.commit_check,
        session_id=session.session_id,
        downloads_dir=downloads_dir,
        commit_gets=commit_gets,
    )
    attached = gate.attach(context, start_url=start_url)
    if attached is None:
        return gate

    async def attach() -> CommitGate:
        await attached
        return gate

    return attach()


# -- the steps, shared by the sync and async APIs (webshepherd.daemon.browser.chromium) -----


def _launch(
    pw: SyncPlaywright | AsyncPlaywright,
    profile: str,
    binary: str,
    headless: bool,
    options: dict[str, Any],
) -> Steps[Context]:
    try:
        context = yield pw.chromium.launch_persistent_context(
            profile, executable_path=binary, headless=headless, **options
        )
    except Exception as exc:
        raise CaptureError(f"Chromium ({binary}) did not start: {worker_message(exc)}") from None
    try:
        worker = yield from _worker(context)
        yield from ready_steps(worker)
    except Exception:
        yield context.close()  # no browser left running behind the error
        raise
    return context


def _observe(page: Page, flags: str, screenshot: bool) -> Steps[Observation]:
    worker = yield from _worker(page.context)
    cap = yield from capture_steps(worker, page.url, flags)
    shot = None
    if screenshot:
        png = yield page.screenshot(type="png")
        shot = Screenshot(mime="image/png", data=base64.b64encode(png).decode("ascii"))
    # elements: what the page says of each target (links, forms and their methods; the guards)
    elements = cap.get("elements") or None
    return Observation(url=cap["url"], axtree=cap["axtree"], screenshot=shot, elements=elements)


def _worker(context: Context) -> Steps[SyncWorker | AsyncWorker]:
    """The extension's service worker in ``context``. When none is listed (Chromium stops a
    worker that answers too slowly on a loaded machine, and starts it again on the next
    extension event), the extension's popup is opened in a new page: its messages start the
    worker; that page failing to load means the browser has no extension."""
    for worker in context.service_workers:
        if worker.url.startswith(_WORKER_PREFIX):
            return worker
    no_extension = CaptureError(
        "this page's browser has no webshepherd extension: open it with "
        "webshepherd.integrations.playwright.launch(...), or launch a persistent context "
        "with the flags of webshepherd.daemon.browser.chromium.launch_args(extension/dist)"
    )
    try:
        page = yield context.new_page()
    except Exception:  # a page of browser.new_page(): its context takes no other page
        raise no_extension from None
    try:
        try:
            yield page.goto(f"{_WORKER_PREFIX}{EXTENSION_ID}/popup.html")
        except Exception:
            raise no_extension from None
        for worker in context.service_workers:
            if worker.url.startswith(_WORKER_PREFIX):
                return worker
        try:
            worker = yield context.wait_for_event(
                "serviceworker", timeout=int(READY_TIMEOUT_S * 1000)
            )
        except Exception as exc:
            raise CaptureError(
                f"the extension's service worker did not start within {READY_TIMEOUT_S:g} s: "
                f"{worker_message(exc)}"
            ) from None
        return worker
    finally:
        yield page.close()


def _is_async(method: object) -> bool:
    return inspect.iscoroutinefunction(method)
