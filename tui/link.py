"""The monitor's connection: subscribe to every session, fold events, catch up after reconnects.

No Textual here: the app runs :meth:`DaemonLink.run` in a worker and gets told about changes
through two callbacks. The SDK's :class:`AsyncClient` reconnects with backoff and re-subscribes;
events sent while disconnected are lost, so after every (re)connect the link lists the
daemon's sessions and reloads, with ``session.get``, each one it has not seen in that state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.common import Decision
from webshepherd.protocol.errors import UnauthorizedError, WebShepherdError
from webshepherd.protocol.version import DEFAULT_URL
from webshepherd.tui.state import MonitorState

log = logging.getLogger(__name__)


class DaemonLink:
    def __init__(
        self,
        state: MonitorState,
        url: str = DEFAULT_URL,
        token: str | None = None,
        *,
        on_change: Callable[[], None] = lambda: None,
        on_status: Callable[[str, bool], None] = lambda text, ok: None,
        history_limit: int = 50,
        backoff_max_s: float = 2.0,
        approver: str | None = None,
    ) -> None:
        self.state = state
        self.url = url
        self.on_change = on_change
        self.on_status = on_status
        self.history_limit = history_limit
        self.catch_ups = 0
        self._token = token
        self._backoff_max_s = backoff_max_s
        self.client = self._client(approver)
        self.refused_approver = False  # the credential was refused: monitoring unpaired

    def _client(self, approver: str | None) -> AsyncClient:
        return AsyncClient(
            self.url,
            self._token,
            name="webshepherd-tui",
            role="monitor",
            approver=approver,
            reconnect=True,
            backoff_initial_s=0.1,
            backoff_max_s=self._backoff_max_s,
        )

    @property
    def paired(self) -> bool:
        """The daemon took this TUI's approver credential: it may decide approvals."""
        welcome = self.client.welcome
        return welcome is not None and welcome.approver

    async def run(self) -> None:
        """Connect (retrying), subscribe, catch up, then fold events until cancelled."""
        client = self.client
        delay = 0.2
        while True:
            try:
                await client.connect()
                break
            except UnauthorizedError as exc:
                if "approver" not in exc.message or self.refused_approver:
                    self.on_status(f"refused: {exc.message}", False)
                    return
                # a revoked or stale pairing: monitor unpaired, say how to pair again
                log.warning("approver credential refused (%s); monitoring unpaired", exc.message)
                self.refused_approver = True
                client = self.client = self._client(None)
            except WebShepherdError as exc:
                self.on_status(f"cannot reach {self.url}; retrying ({exc.code.value})", False)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._backoff_max_s)
        sub = client.subscribe("*")
        watcher: asyncio.Task[None] | None = None
        try:
            await sub.start()
            self._connected()
            await self.catch_up()
            watcher = asyncio.create_task(self._watch(), name="tui-link-watch")
            async for event in sub:
                self.state.fold(event)
                self.on_change()
        except UnauthorizedError as exc:
            self.on_status(f"refused: {exc.message}", False)
        finally:
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
            await client.close()

    def _connected(self) -> None:
        daemon = self.client.welcome.daemon if self.client.welcome else None
        model = f" · {daemon.model} ({daemon.backend})" if daemon else ""
        if self.paired:
            paired = " · paired: decides approvals"
        elif self.refused_approver:
            paired = " · pairing refused (revoked?): run `webshepherd pair tui` to decide"
        else:
            paired = " · not paired: run `webshepherd pair tui` to decide approvals"
        self.on_status(f"connected to {self.url}{paired}{model}", True)  # can it decide: first

    async def _watch(self) -> None:
        seen, was = self.client.reconnects, True
        while True:
            await asyncio.sleep(0.2)
            now = self.client.connected
            if was and not now:
                self.on_status(f"connection lost; reconnecting to {self.url} …", False)
            was = now
            if self.client.reconnects != seen and now:
                seen = self.client.reconnects
                self._connected()
                try:
                    await self.catch_up()
                except WebShepherdError as exc:
                    log.info("catch-up failed: %s", exc)

    async def catch_up(self) -> int:
        """Reload the sessions whose summary differs from what is shown; returns how many."""
        summaries = await self.client.sessions(self.history_limit)
        loaded = 0
        for s in summaries:
            view = self.state.sessions.get(s.session_id)
            if (
                view is not None
                and view.state == s.state
                and view.step_count == s.steps
                and view.intent
            ):
                continue
            try:
                reply = await self.client.session(s.session_id)
            except WebShepherdError as exc:
                log.info("session.get %s failed: %s", s.session_id, exc)
                continue
            self.state.load_history(reply)
            loaded += 1
            self.on_change()
        self.catch_ups += 1
        self.on_change()
        return loaded

    async def decide(self, request_id: str, decision: Decision, action: str | None = None) -> str:
        reply = await self.client.decide(request_id, decision, action)
        return reply.decision
