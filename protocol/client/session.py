"""Small pieces of the client SDK: a session handle and input coercion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel
from webshepherd.protocol.client.connection import ProgressCallback
from webshepherd.protocol.common import (
    Candidate,
    CommitMode,
    ElementFacts,
    HeldRequest,
    ItemLabel,
    Observation,
    Screenshot,
    Source,
    TreeNodeFields,
)
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

M = TypeVar("M", bound=BaseModel)

Fields = Mapping[str, object]
"""A wire model given as its JSON fields (validated into the model before it is sent)."""

CandidateLike = Candidate | Fields | tuple[str, str] | str
"""A candidate as a model, a dict, a ``(thought, action)`` pair, or a bare action string."""


def to_model(model: type[M], value: M | Fields | None) -> M | None:
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


class SessionClient(Protocol):
    """The calls of :class:`~.async_client.AsyncClient` a :class:`SessionHandle` makes for its
    session (declared here so this module need not import the client)."""

    async def checklist(self, session_id: str, timeout: float | None = ...) -> Checklist: ...

    async def observe(
        self,
        session_id: str,
        url: str,
        axtree: str,
        screenshot: Screenshot | Fields | None = ...,
        elements: Mapping[str, ElementFacts | Fields] | None = ...,
    ) -> Observed: ...

    async def score(
        self,
        session_id: str,
        candidates: Sequence[CandidateLike],
        observation: Observation | Fields | None = ...,
        samples: int | None = ...,
        approval: Literal["auto", "always", "never"] = ...,
        *,
        on_progress: ProgressCallback | None = ...,
        timeout: float | None = ...,
    ) -> Scored: ...

    async def report_action(
        self,
        session_id: str,
        action: str,
        thought: str | None = ...,
        step: int | None = ...,
        source: Source = ...,
    ) -> ActionRecorded: ...

    async def label(
        self,
        session_id: str,
        step: int,
        action: str,
        items: Sequence[ItemLabel],
        source: Literal["environment", "person"] = ...,
        note: str | None = ...,
    ) -> LabelRecorded: ...

    async def tree_node(self, session_id: str, node: TreeNodeFields) -> TreeNodeRecorded: ...

    async def commit_check(
        self, session_id: str, request: HeldRequest, *, timeout: float | None = ...
    ) -> CommitDecided: ...

    async def set_mode(self, session_id: str, mode: CommitMode) -> ModeSet: ...

    async def end_session(
        self,
        session_id: str,
        outcome: Literal["success", "failure", "unknown"] = ...,
        answer: str | None = ...,
    ) -> SessionEnded: ...

    async def ping(self) -> float: ...


class SessionHandle(SessionRef[SessionClient]):
    """One started session: its id plus shortcuts to the client's session calls."""

    async def checklist(self, timeout: float | None = 60.0) -> Checklist:
        return await self.client.checklist(self.session_id, timeout)

    async def observe(
        self,
        url: str,
        axtree: str,
        screenshot: Screenshot | Fields | None = None,
        elements: Mapping[str, ElementFacts | Fields] | None = None,
    ) -> Observed:
        return await self.client.observe(self.session_id, url, axtree, screenshot, elements)

    async def score(
        self,
        /,
        candidates: Sequence[CandidateLike],
        observation: Observation | Fields | None = None,
        samples: int | None = None,
        approval: Literal["auto", "always", "never"] = "auto",
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | None = None,
    ) -> Scored:
        return await self.client.score(
            self.session_id,
            candidates,
            observation,
            samples,
            approval,
            on_progress=on_progress,
            timeout=timeout,
        )

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
