"""The monitor's connection: subscribe to every session, fold events, catch up after reconnects.

No Textual here: the app runs :meth:`DaemonLink.run` in a worker and gets told about changes
through two callbacks. The SDK's :class:`AsyncClient` reconnects with backoff and re-subscribes;
events sent while disconnected are lost, so after every (re)connect the link lists the
daemon's sessions and reloads, with ``session.get``, each one it has not seen in that state.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.common import CommitMode, Decision
from webshepherd.protocol.errors import UnauthorizedError, WebShepherdError
from webshepherd.protocol.tasks import reap
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
        credential: Callable[[], str | None] | None = None,
        credential_poll_s: float = 1.0,
    ) -> None:
        self.state = state
        self.url = url
        # re-read while running: a `webshepherd pair tui` (or a revoke and a new pairing) is
        # picked up without a restart
        self.credential = credential
        self.credential_poll_s = credential_poll_s
        self.approver = approver
        self.repairs = 0  # times a new credential was taken up
        self._repairing = False  # the watcher closed the client for a new credential
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
            daemon_wait_s=0.0,  # run() retries and says so
        )

    @property
    def paired(self) -> bool:
        """The daemon took this TUI's approver credential: it may decide approvals."""
        welcome = self.client.welcome
        return welcome is not None and welcome.approver

    def _credential_changed(self) -> str | None:
        """The credential file's new content when it differs from the one in use, else None."""
        if self.credential is None:
            return None
        now = self.credential()
        return now if now is not None and now != self.approver else None

    async def run(self) -> None:
        """Connect (retrying), subscribe, catch up, then fold events until cancelled; start
        over with a new approver credential when its file changes."""
        while await self._run_once():
            approver = self._credential_changed() or self.approver
            self.approver, self.refused_approver = approver, False
            self.client = self._client(approver)
            self.repairs += 1

    async def _run_once(self) -> bool:
        """One connection's life; True when it ended for a new credential."""
        client = self.client
        delay = 0.2
        while True:
            if self._credential_changed() is not None:
                return True
            try:
                await client.connect()
                break
            except UnauthorizedError as exc:
                if "approver" not in exc.message or self.refused_approver:
                    self.on_status(f"refused: {exc.message}", False)
                    return False
                # a revoked or stale pairing: monitor unpaired, say how to pair again
                log.warning("approver credential refused (%s); monitoring unpaired", exc.message)
                self.refused_approver = True
                client = self.client = self._client(None)
            except WebShepherdError as exc:
                if not exc.retryable:  # a server answered, but not as the daemon: say what
                    self.on_status(f"cannot connect: {exc.message}", False)
                    return False
                log.info("cannot reach %s: %s", self.url, exc.message)
                self.on_status(unreachable(self.url), False)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._backoff_max_s)
        sub = client.subscribe("*")
        watcher: asyncio.Task[bool] | None = None
        try:
            await sub.start()
            self._connected()
            await self.catch_up()
            watcher = asyncio.create_task(self._watch(), name="tui-link-watch")
            async for event in sub:
                self.state.fold(event, at=time.time())  # the wire's events carry no time
                self.on_change()
        except UnauthorizedError as exc:
            self.on_status(f"refused: {exc.message}", False)
        finally:
            if watcher is not None:
                watcher.cancel()
                await reap(watcher)  # a cancellation of run()'s caller still propagates
            await client.close()
        repair, self._repairing = self._repairing, False
        return repair

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

    async def _watch(self) -> bool:
        """Say when the connection drops and comes back (and catch up then); True, after
        closing the client, when the approver credential's file changed."""
        seen, was = self.client.reconnects, True
        polled = asyncio.get_running_loop().time()
        while True:
            await asyncio.sleep(0.2)
            clock = asyncio.get_running_loop().time()
            if clock - polled >= self.credential_poll_s or self.client.reconnects != seen:
                polled = clock
                if self._credential_changed() is not None:
                    log.info("the approver credential changed: connecting again with it")
                    self._repairing = True
                    await self.client.close()  # ends the subscription: run() starts over
                    return True
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
                and (s.mode is None or view.mode == s.mode)
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

    async def decide(
        self,
        request_id: str,
        decision: Decision,
        action: str | None = None,
        *,
        allow_origin: bool = False,
    ) -> str:
        reply = await self.client.decide(request_id, decision, action, allow_origin=allow_origin)
        return reply.decision

    async def set_mode(self, session_id: str, mode: CommitMode) -> CommitMode:
        """Switch a session's mode (``session.mode``; a paired TUI only); folds the reply."""
        reply = await self.client.set_mode(session_id, mode)
        self.state.fold(reply)
        self.on_change()
        return reply.mode


def unreachable(url: str) -> str:
    """The status line while no daemon answers at ``url``, in words, with the command that
    starts one."""
    return (
        f"no webshepherd daemon answers at {url} (retrying): start one with "
        "`webshepherd serve`, or point the TUI at yours with --url or WEBSHEPHERD_URL"
    )
