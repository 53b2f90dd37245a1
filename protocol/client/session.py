"""Small pieces of the client SDK: a session handle and input coercion (the input shapes,
``Fields`` and ``CandidateLike``, live in calls.py, which the generated session_api.py imports
without a loop)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

from pydantic import BaseModel
from webshepherd.protocol.client.calls import CandidateLike, Fields
from webshepherd.protocol.client.session_api import SessionCalls, SessionClient
from webshepherd.protocol.common import Candidate

__all__ = [
    "CandidateLike",
    "Fields",
    "SessionClient",
    "SessionHandle",
    "SessionRef",
    "to_candidates",
    "to_model",
]

M = TypeVar("M", bound=BaseModel)


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
    """A started session of a client: the client, the session's id and its intent;
    ``commits``: the daemon's patterns of GETs that commit (``session.started.commits``),
    which a browser gate deciding by this session holds."""

    def __init__(
        self, client: ClientT, session_id: str, intent: str, *, commits: tuple[str, ...] = ()
    ) -> None:
        self.client = client
        self.session_id = session_id
        self.intent = intent
        self.commits = commits

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.session_id!r})"


class SessionHandle(SessionCalls, SessionRef[SessionClient]):
    """One started session: its id plus shortcuts to the client's session calls (the
    methods of :class:`~.session_api.SessionCalls`, generated from the client's)."""
