"""Async Python client SDK for the webshepherd daemon (protocol v1).

```python
async with AsyncClient() as client:              # token from `webshepherd token`'s store
    session = await client.start_session("Buy the cheapest USB-C cable",
                                         observation=Observation(url=url, axtree=tree))
    scored = await session.score([("The search box is [12].", "fill('12', 'usb-c')"),
                                  ("Maybe the deals page.", "click('40')")])
    print(scored.best, [r.reward for r in scored.results])
```

One background reader task routes replies to the waiting call by ``id`` and
pushes events (messages without ``id``) to subscriptions. Error replies are
raised as the typed exception of their code (``error_from_code``). When the
connection drops, calls in flight fail with :class:`ConnectionLostError`
(``retryable=True``) and, with ``reconnect=True``, the client reconnects with
exponential backoff, says hello again and re-subscribes; calls made meanwhile
wait for the new connection. Events sent while disconnected are lost: catch up
with :meth:`AsyncClient.session`.

Dependencies: websockets and pydantic only (the token store imports keyring
lazily and works without it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from webshepherd.protocol.client.session import (
    CandidateLike,
    SessionHandle,
    Subscription,
    to_candidates,
    to_model,
)
from webshepherd.protocol.client.transport import ClientTransport, ProgressCallback, client_version
from webshepherd.protocol.common import AgentInfo, Observation, Screenshot, SessionSummary, Source
from webshepherd.protocol.errors import ErrorCode, WebShepherdError
from webshepherd.protocol.replies import (
    ActionRecorded,
    ApprovalResolved,
    Checklist,
    Observed,
    Pong,
    Scored,
    Session,
    SessionEnded,
    Sessions,
    SessionStarted,
)
from webshepherd.protocol.requests import (
    Action,
    ApprovalDecide,
    Observe,
    Ping,
    Score,
    SessionEnd,
    SessionGet,
    SessionsList,
    SessionStart,
)

__all__ = ["AsyncClient", "SessionHandle", "Subscription", "client_version"]


class AsyncClient(ClientTransport):
    """A connection to the daemon. Use ``async with``, or ``connect()`` / ``close()``."""

    async def __aenter__(self) -> AsyncClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ----------------------------------------------------------------- requests

    async def start_session(
        self,
        intent: str,
        start_url: str | None = None,
        checklist: str | None = None,
        observation: Observation | dict[str, Any] | None = None,
        agent: AgentInfo | dict[str, Any] | str | None = None,
        source: Source = "agent",
    ) -> SessionHandle:
        if isinstance(agent, str):
            agent = AgentInfo(name=agent)
        msg = SessionStart(
            id=self._next_id("s"),
            intent=intent,
            start_url=start_url,
            checklist=checklist,
            observation=to_model(Observation, observation),
            agent=to_model(AgentInfo, agent) or AgentInfo(name=self.info.name),
            source=source,
        )
        started = await self.call(msg, SessionStarted)
        return SessionHandle(self, started.session_id, intent)

    async def observe(
        self,
        session_id: str,
        url: str,
        axtree: str,
        screenshot: Screenshot | dict[str, Any] | None = None,
    ) -> Observed:
        msg = Observe(
            id=self._next_id("o"),
            session_id=session_id,
            url=url,
            axtree=axtree,
            screenshot=to_model(Screenshot, screenshot),
        )
        return await self.call(msg, Observed)

    async def score(
        self,
        session_id: str,
        candidates: Sequence[CandidateLike],
        observation: Observation | dict[str, Any] | None = None,
        samples: int | None = None,
        approval: Literal["auto", "always", "never"] = "auto",
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | None = None,
    ) -> Scored:
        """Score candidate actions; waits for a human decision when approval is requested."""
        msg = Score(
            id=self._next_id("c"),
            session_id=session_id,
            candidates=to_candidates(candidates),
            observation=to_model(Observation, observation),
            samples=samples,
            approval=approval,
        )
        if on_progress is not None:
            self._progress[msg.id] = on_progress
        try:
            return await self.call(msg, Scored, timeout)
        finally:
            self._progress.pop(msg.id, None)

    async def report_action(
        self,
        session_id: str,
        action: str,
        thought: str | None = None,
        step: int | None = None,
        source: Source = "agent",
    ) -> ActionRecorded:
        msg = Action(
            id=self._next_id("x"),
            session_id=session_id,
            step=step,
            action=action,
            thought=thought,
            source=source,
        )
        return await self.call(msg, ActionRecorded)

    async def end_session(
        self,
        session_id: str,
        outcome: Literal["success", "failure", "unknown"] = "unknown",
        answer: str | None = None,
    ) -> SessionEnded:
        msg = SessionEnd(
            id=self._next_id("e"), session_id=session_id, outcome=outcome, answer=answer
        )
        return await self.call(msg, SessionEnded)

    def subscribe(
        self, sessions: Literal["*"] | Iterable[str] = "*", *, maxsize: int = 10_000
    ) -> Subscription:
        """Events of the given sessions: ``async for event in client.subscribe(): ...``."""
        return Subscription(self, sessions if sessions == "*" else list(sessions), maxsize)

    async def decide(
        self,
        request_id: str,
        decision: Literal["approve", "reject", "edit"],
        action: str | None = None,
        note: str | None = None,
    ) -> ApprovalResolved:
        msg = ApprovalDecide(
            id=self._next_id("d"),
            request_id=request_id,
            decision=decision,
            action=action,
            note=note,
        )
        return await self.call(msg, ApprovalResolved)

    async def sessions(self, limit: int = 100) -> list[SessionSummary]:
        return (
            await self.call(SessionsList(id=self._next_id("m"), limit=limit), Sessions)
        ).sessions

    async def session(self, session_id: str) -> Session:
        """The whole recorded history of one session (fetched page by page when it does not
        fit one frame; returned as one ``Session``)."""
        first = await self.call(SessionGet(id=self._next_id("m"), session_id=session_id), Session)
        reply, events = first, list(first.events)
        while reply.next is not None:
            msg = SessionGet(id=self._next_id("m"), session_id=session_id, after=reply.next)
            reply = await self.call(msg, Session)
            events += reply.events
        return first.model_copy(update={"events": events, "next": None})

    async def ping(self) -> float:
        """Round-trip time in seconds."""
        t0 = time.perf_counter()
        await self.call(Ping(id=self._next_id("p")), Pong)
        return time.perf_counter() - t0

    async def checklist(self, session_id: str, timeout: float | None = 60.0) -> Checklist:
        """The session's checklist (the daemon pushes it once, after ``session.start``)."""
        if session_id in self._checklists:
            return self._checklists[session_id]
        fut: asyncio.Future[Checklist] = asyncio.get_running_loop().create_future()
        self._checklist_waiters.setdefault(session_id, []).append(fut)
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise WebShepherdError(
                f"no checklist for session {session_id} within {timeout} s", ErrorCode.TIMEOUT
            ) from None
