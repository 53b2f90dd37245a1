"""Who is there, as the session machine knows it: :class:`Caller`, the facts of the connection
a request came on, and :class:`Connections`, the connections the socket layer reported open.
The socket layer feeds both; the machine reads only what it was fed (sans-I/O)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Caller:
    """The connection a request came on: ``id``; ``label``, how records name it
    (``monitor:laptop-tui``); ``who``, the role an error names; ``is_agent``, an agent's
    connection (declared so, not a paired person's tool); ``paired``, it presented a paired
    person's credential that the socket layer found still paired."""

    id: int
    label: str
    who: str
    is_agent: bool
    paired: bool = False


class Connections:
    """The open connections and which of them is a paired person's tool: whether a session's
    holder is still here, whether a person could answer an approval request now, and where
    (:meth:`places`)."""

    def __init__(self) -> None:
        self._person: dict[int, bool] = {}
        self._tool: dict[int, tuple[str, str]] = {}  # a paired tool's (role, label)
        self._follows: dict[int, frozenset[str] | Literal["*"]] = {}

    def opened(self, conn: int, *, person: bool, tool: tuple[str, str] | None = None) -> None:
        """Connection ``conn`` is open; ``person``: it presented a paired person's credential,
        ``tool``: that credential's role and label (``("monitor", "monitor:laptop-tui")``)."""
        self._person[conn] = person
        self._set_tool(conn, person, tool)

    def changed(self, conn: int, *, person: bool, tool: tuple[str, str] | None = None) -> None:
        """Open connection ``conn`` paired, or lost its pairing (one closed stays closed)."""
        if conn in self._person:
            self._person[conn] = person
            self._set_tool(conn, person, tool)

    def subscribed(self, conn: int, sessions: Iterable[str] | Literal["*"]) -> None:
        """Open connection ``conn`` follows ``sessions`` now (``*``: every session)."""
        if conn in self._person:
            self._follows[conn] = "*" if sessions == "*" else frozenset(sessions)

    def closed(self, conn: int) -> None:
        self._person.pop(conn, None)
        self._tool.pop(conn, None)
        self._follows.pop(conn, None)

    def _set_tool(self, conn: int, person: bool, tool: tuple[str, str] | None) -> None:
        if person and tool is not None:
            self._tool[conn] = tool
        elif not person:
            self._tool.pop(conn, None)

    def __contains__(self, conn: object) -> bool:
        return conn in self._person

    def person_present(self) -> bool:
        """Whether a paired person's tool is connected (a declared role counts for nothing)."""
        return any(self._person.values())

    def places(self, session_id: str) -> tuple[str, ...]:
        """Where a person could decide ``session_id``'s approval requests now: each paired,
        connected tool that shows them (the TUI every session's, as approval requests reach every
        paired tool; the extension's side panel only those of the sessions its tabs follow: the
        ones it subscribed to), as ``the TUI (monitor:laptop)``."""
        out: set[str] = set()
        for conn, (role, label) in self._tool.items():
            follows = self._follows.get(conn, frozenset())
            shows = role != "extension" or follows == "*" or session_id in follows
            if self._person.get(conn) and shows:
                out.add(f"{_TOOL_NAMES.get(role, role)} ({label})")
        return tuple(sorted(out))


#: How a paired tool's role is named as a place to decide.
_TOOL_NAMES = {"monitor": "the TUI", "extension": "the extension's side panel"}
