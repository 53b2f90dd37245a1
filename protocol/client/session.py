"""Small pieces of the client SDK: a session handle, a subscription, input coercion."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel
from webshepherd.protocol.common import (
    Candidate,
    CommitMode,
    HeldRequest,
    ItemLabel,
    Observation,
    TreeNodeFields,
)
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.replies import (
    ActionRecorded,
    Checklist,
    CommitDecided,
    LabelRecorded,
    ModeSet,
    Observed,
    Scored,
    SessionEnded,
    TreeNodeRecorded,
)
from webshepherd.protocol.requests import Subscribe
from webshepherd.protocol.union import ServerMessage

if TYPE_CHECKING:
    from webshepherd.protocol.client import AsyncClient

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)

CandidateLike = Candidate | dict[str, Any] | tuple[str, str] | str
"""A candidate as a model, a dict, a ``(thought, action)`` pair, or a bare action string."""


def to_model(model: type[M], value: M | dict[str, Any] | None) -> M | None:
    if value is None or isinstance(value, model):
        return value
    return model.model_validate(value)


def to_candidates(candidates: Sequence[CandidateLike]) -> list[Candidate]:
    out = []
    for c in candidates:
        if isinstance(c, str):
            out.append(Candidate(action=c))
        elif isinstance(c, tuple):
            thought, action = c
            out.append(Candidate(thought=thought, action=action))
        else:
            out.append(to_model(Candidate, c) or Candidate(action=""))
    return out


ClientT = TypeVar("ClientT")


class SessionRef(Generic[ClientT]):
    """A started session of a client: the client, the session's id and its intent."""

    def __init__(self, client: ClientT, session_id: str, intent: str) -> None:
        self.client = client
        self.session_id = session_id
        self.intent = intent

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.session_id!r})"


class SessionHandle(SessionRef["AsyncClient"]):
    """One started session: its id plus shortcuts to the client's session calls."""

    async def checklist(self, timeout: float | None = 60.0) -> Checklist:
        return await self.client.checklist(self.session_id, timeout)

    async def observe(
        self, url: str, axtree: str, screenshot: Any = None, elements: Any = None
    ) -> Observed:
        return await self.client.observe(self.session_id, url, axtree, screenshot, elements)

    async def score(
        self,
        /,
        candidates: Sequence[CandidateLike],
        observation: Observation | dict[str, Any] | None = None,
        **kw: Any,
    ) -> Scored:
        return await self.client.score(self.session_id, candidates, observation, **kw)

    async def act(
        self,
        action: str,
        thought: str | None = None,
        step: int | None = None,
        source: Literal["agent", "human"] = "agent",
    ) -> ActionRecorded:
        return await self.client.report_action(self.session_id, action, thought, step, source)

    async def label(
        self,
        step: int,
        action: str,
        items: Sequence[ItemLabel],
        source: Literal["environment", "person"] = "environment",
        note: str | None = None,
    ) -> LabelRecorded:
        """Ground truth for a candidate scored at ``step`` (one label per checklist item)."""
        return await self.client.label(self.session_id, step, action, items, source, note)

    async def tree_node(self, node: TreeNodeFields) -> TreeNodeRecorded:
        """Report one node of a tree search, new or changed (``tree.node``)."""
        return await self.client.tree_node(self.session_id, node)

    async def commit_check(
        self, request: HeldRequest, *, timeout: float | None = None
    ) -> CommitDecided:
        """Ask whether a request the browser paused may leave (``commit.check``)."""
        return await self.client.commit_check(self.session_id, request, timeout=timeout)

    async def set_mode(self, mode: CommitMode) -> ModeSet:
        """Set this session's mode (a paired person's tool only)."""
        return await self.client.set_mode(self.session_id, mode)

    async def end(
        self,
        outcome: Literal["success", "failure", "unknown"] = "unknown",
        answer: str | None = None,
    ) -> SessionEnded:
        return await self.client.end_session(self.session_id, outcome, answer)


_END = object()


class Subscription:
    """An async iterator of events; ends when the client closes or is refused for good.

    The subscription is sent on first iteration (or ``await sub.start()`` /
    ``async with``) and re-sent after every reconnect. It also yields the events of
    this connection's own requests (the daemon answers the requester with a reply
    instead). Its queue is bounded: when the reader falls behind, the oldest events
    are dropped (counted in ``dropped``).
    """

    def __init__(
        self, client: AsyncClient, sessions: Literal["*"] | list[str], maxsize: int
    ) -> None:
        self.client = client
        self.sessions = sessions
        self.started = False
        self.dropped = 0
        self._accepting = False
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize)
        self._done = False

    def _request(self, rid: str) -> Subscribe:
        return Subscribe(id=rid, sessions=self.sessions)

    async def start(self) -> Subscription:
        if not self.started:
            self._accepting = True  # events may arrive right behind the `subscribed` reply
            try:
                await self.client._start_subscription(self)
            except BaseException:
                self._accepting = False
                raise
            self.started = True
        return self

    def close(self) -> None:
        """Stop receiving (the daemon keeps sending to the connection; the client drops them)."""
        self.client._drop_subscription(self)
        self._finish(None)

    async def __aenter__(self) -> Subscription:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> ServerMessage:
        if not self.started and not self._done:
            await self.start()
        item = await self._queue.get()
        if item is _END:
            self._queue.put_nowait(_END)  # later calls end too
            raise StopAsyncIteration
        if isinstance(item, WebShepherdError):
            self._queue.put_nowait(_END)
            raise item
        message: ServerMessage = item
        return message

    async def get(self, timeout: float | None = None) -> ServerMessage:
        """The next event, or ``TimeoutError`` after ``timeout`` seconds."""
        return await asyncio.wait_for(self.__anext__(), timeout)

    def _wanted(self, msg: ServerMessage) -> bool:
        if self.sessions == "*":
            return True
        sid = getattr(msg, "session_id", None)
        return sid is None or sid in self.sessions

    def _offer(self, msg: ServerMessage) -> None:
        if self._done or not self._accepting or not self._wanted(msg):
            return
        if self._queue.full():
            self._queue.get_nowait()
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("subscription queue full: dropped %d events", self.dropped)
        self._queue.put_nowait(msg)

    def _finish(self, exc: WebShepherdError | None) -> None:
        if self._done:
            return
        self._done = True
        if self._queue.full():
            self._queue.get_nowait()
        self._queue.put_nowait(exc if exc is not None else _END)
