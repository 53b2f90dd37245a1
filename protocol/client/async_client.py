"""The async Python client SDK for the webshepherd daemon (protocol v1).

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
exponential backoff, says hello again and re-subscribes; a call made meanwhile
waits ``reconnect_wait_s`` (3 s) for the new connection, then fails saying the
daemon is gone. Events sent while disconnected are lost: catch up
with :meth:`AsyncClient.session`.

Dependencies: websockets and pydantic only (the token store imports keyring
lazily and works without it).

The frames' meaning (ids, routing, typed errors) lives in the sans-I/O
:class:`~.core.ClientCore`; its websockets layer (the socket, the reader task, the futures
of waiting calls, reconnecting) is :class:`~.connection.Connection`; this module adds the
protocol's requests.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from webshepherd.protocol.client.calls import CandidateLike, Fields, session_call
from webshepherd.protocol.client.connection import Connection, ProgressCallback
from webshepherd.protocol.client.session import SessionHandle, to_candidates, to_model
from webshepherd.protocol.client.subscription import Subscription
from webshepherd.protocol.common import (
    AgentInfo,
    CommitMode,
    ElementFacts,
    EnvironmentInfo,
    HeldRequest,
    ItemLabel,
    Observation,
    Screenshot,
    SessionSource,
    SessionSummary,
    Source,
    TreeNodeFields,
)
from webshepherd.protocol.errors import (
    ErrorCode,
    WebShepherdError,
)
from webshepherd.protocol.replies import (
    ActionRecorded,
    ApprovalResolved,
    Checklist,
    CommitDecided,
    HookGranted,
    LabelRecorded,
    ModeSet,
    Observed,
    Paired,
    Pong,
    Scored,
    Session,
    SessionEnded,
    Sessions,
    SessionStarted,
    TreeNodeRecorded,
)
from webshepherd.protocol.requests import (
    Action,
    ApprovalDecide,
    CommitCheck,
    HookGrant,
    Label,
    Observe,
    Pair,
    Ping,
    Score,
    SessionEnd,
    SessionGet,
    SessionMode,
    SessionsList,
    SessionStart,
    TreeNode,
    TruthSource,
)

log = logging.getLogger(__name__)


class AsyncClient(Connection):
    """A connection to the daemon with the protocol's requests. Use ``async with``, or
    ``connect()`` / ``close()``."""

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
        observation: Observation | Fields | None = None,
        agent: AgentInfo | Fields | str | None = None,
        source: SessionSource = "agent",
        holds: Literal["browser"] | None = None,
        environment: EnvironmentInfo | Fields | None = None,
    ) -> SessionHandle:
        """Start a session. ``holds="browser"``: this client's browser pauses every request
        that would commit and asks with :meth:`commit_check`, so the daemon's rules only
        predict (``scored.predicted``) and never hold its steps. ``environment``: what resets
        the environment to the start (recorded for replays)."""
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
            holds=holds,
            environment=to_model(EnvironmentInfo, environment),
        )
        started = await self.call(msg, SessionStarted)
        return SessionHandle(self, started.session_id, intent, commits=tuple(started.commits or ()))

    @session_call()
    async def observe(
        self,
        session_id: str,
        url: str,
        axtree: str,
        screenshot: Screenshot | Fields | None = None,
        elements: Mapping[str, ElementFacts | Fields] | None = None,
    ) -> Observed:
        """One observation of the session's page; ``elements`` (bid -> what the page says of
        the element: links, downloads, the form it submits and its method) let the daemon's
        guards hold an action that commits (docs/protocol-additions.md)."""
        msg = Observe(
            id=self._next_id("o"),
            session_id=session_id,
            url=url,
            axtree=axtree,
            screenshot=to_model(Screenshot, screenshot),
            elements=None
            if elements is None
            else {bid: ElementFacts.model_validate(f) for bid, f in elements.items()},
        )
        return await self.call(msg, Observed)

    @session_call()
    async def score(
        self,
        session_id: str,
        candidates: Sequence[CandidateLike],
        observation: Observation | Fields | None = None,
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

    @session_call("act")
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

    @session_call()
    async def label(
        self,
        session_id: str,
        step: int,
        action: str,
        items: Sequence[ItemLabel],
        source: TruthSource = "environment",
        note: str | None = None,
    ) -> LabelRecorded:
        """Record ground truth for a candidate scored at ``step``: each checklist item's state
        after ``action`` (docs/protocol-additions.md; training targets come from it)."""
        msg = Label(
            id=self._next_id("l"),
            session_id=session_id,
            step=step,
            action=action,
            items=list(items),
            source=source,
            note=note,
        )
        return await self.call(msg, LabelRecorded)

    @session_call()
    async def tree_node(self, session_id: str, node: TreeNodeFields) -> TreeNodeRecorded:
        """Report one node of a tree search, new or changed (``tree.node``; the daemon records
        every update and sends it to the session's subscribers)."""
        fields = node.model_dump(include=set(TreeNodeFields.model_fields))
        msg = TreeNode(id=self._next_id("n"), session_id=session_id, **fields)
        return await self.call(msg, TreeNodeRecorded)

    @session_call("end")
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
        *,
        allow_origin: bool = False,
    ) -> ApprovalResolved:
        """Decide an open approval request; ``allow_origin`` (with 'approve', on a request the
        browser paused) also allows its target origin for the rest of the session."""
        msg = ApprovalDecide(
            id=self._next_id("d"),
            request_id=request_id,
            decision=decision,
            action=action,
            note=note,
            allow_origin=allow_origin,
        )
        return await self.call(msg, ApprovalResolved)

    @session_call()
    async def commit_check(
        self, session_id: str, request: HeldRequest, *, timeout: float | None = None
    ) -> CommitDecided:
        """Ask whether a request the browser paused may leave (``commit.check``): the daemon
        answers by the session's mode (in 'ask' a paired person decides, which may take
        until the approval timeout). Let the request go only when ``decision.status`` is
        'approved' and ``request_digest`` is that of the request paused."""
        msg = CommitCheck(id=self._next_id("q"), session_id=session_id, request=request)
        return await self.call(msg, CommitDecided, timeout)

    @session_call()
    async def set_mode(self, session_id: str, mode: CommitMode) -> ModeSet:
        """Set a session's mode (``session.mode``): only a paired person's tool may."""
        msg = SessionMode(id=self._next_id("v"), session_id=session_id, mode=mode)
        return await self.call(msg, ModeSet)

    async def pair(self, code: str, name: str) -> Paired:
        """Pair this connection with a one-time code from ``webshepherd pair`` (a person's
        command): the reply holds the approver credential, which this client then presents
        on every reconnect. Keep it where only the person's tool reads it."""
        paired = await self.call(Pair(id=self._next_id("a"), code=code, name=name), Paired)
        self._approver = paired.credential
        return paired

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

    async def hook_grant(self, session_id: str | None = None) -> HookGranted:
        """:meth:`hook_key`'s grant whole: the key, and ``reply_key``, which checks the
        extension's replies (``protocol.client.page_hook.hook_request``); keep it out of the
        page."""
        return await self.call(HookGrant(id=self._next_id("k"), session_id=session_id), HookGranted)

    async def hook_key(self, session_id: str | None = None) -> str:
        """A key for the extension's page hook (docs/protocol-additions.md): with
        ``session_id``, a page may ``attach`` to this client's session; without, it may start
        one session. Hand it to the agent's own page script only; redeem it within minutes."""
        msg = HookGrant(id=self._next_id("k"), session_id=session_id)
        return (await self.call(msg, HookGranted)).key

    @session_call(forward=False)
    async def ping(self) -> float:
        """Round-trip time in seconds."""
        t0 = time.perf_counter()
        await self.call(Ping(id=self._next_id("p")), Pong)
        return time.perf_counter() - t0

    @session_call()
    async def checklist(self, session_id: str, timeout: float | None = 60.0) -> Checklist:
        """The session's checklist (the daemon pushes it once, after ``session.start``)."""
        if session_id in self._core.checklists:
            return self._core.checklists[session_id]
        fut: asyncio.Future[Checklist] = asyncio.get_running_loop().create_future()
        self._checklist_waiters.setdefault(session_id, []).append(fut)
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise WebShepherdError(
                f"no checklist for session {session_id} within {timeout} s", ErrorCode.TIMEOUT
            ) from None
