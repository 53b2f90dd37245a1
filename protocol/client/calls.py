"""What the client's calls share below the client (so the generated modules import it without
a loop): the shapes a caller may give values in, and :func:`session_call`, the mark on the
:class:`~.async_client.AsyncClient` methods a session handle makes for its session
(``make sync-client`` writes the handle's methods and ``SessionClient`` from the marks)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from webshepherd.protocol.common import Candidate

Fields = Mapping[str, object]
"""A wire model given as its JSON fields (validated into the model before it is sent)."""

CandidateLike = Candidate | Fields | tuple[str, str] | str
"""A candidate as a model, a dict, a ``(thought, action)`` pair, or a bare action string."""

F = TypeVar("F", bound=Callable[..., object])

MARK = "__session_call__"
"""The attribute :func:`session_call` sets on the method it marks (a :class:`SessionCall`)."""


@dataclass(frozen=True)
class SessionCall:
    """How a session handle makes a marked client method: ``name`` is the handle's method;
    without ``forward`` the handle has none and only calls the method on its client."""

    name: str
    forward: bool


def session_call(name: str | None = None, *, forward: bool = True) -> Callable[[F], F]:
    """Mark a client method that a session handle makes. With ``forward`` (the default) the
    handle gets a method ``name`` (default: the client's name) with the same parameters less
    the first, ``session_id``, which passes the handle's; without, the handle's client must
    offer the method (the ``SessionClient`` Protocol declares it) and the handle has no twin.
    The method itself is returned unchanged."""
    if name is not None and not forward:
        raise ValueError(f"session_call({name!r}, forward=False): a name needs a forwarder")
    if name is not None and not name.isidentifier():
        raise ValueError(f"session_call({name!r}): not a method name")

    def mark(fn: F) -> F:
        setattr(fn, MARK, SessionCall(name or fn.__name__, forward))
        return fn

    return mark
