"""Who is there, as the session machine knows it: :class:`Caller`, the facts of the connection
a request came on, and :class:`Connections`, the connections the socket layer reported open.
The socket layer feeds both; the machine reads only what it was fed (sans-I/O)."""

from __future__ import annotations

from dataclasses import dataclass


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
    holder is still here, and whether a person could answer an approval request now."""

    def __init__(self) -> None:
        self._person: dict[int, bool] = {}

    def opened(self, conn: int, *, person: bool) -> None:
        """Connection ``conn`` is open; ``person``: it presented a paired person's credential."""
        self._person[conn] = person

    def changed(self, conn: int, *, person: bool) -> None:
        """Open connection ``conn`` paired, or lost its pairing (one closed stays closed)."""
        if conn in self._person:
            self._person[conn] = person

    def closed(self, conn: int) -> None:
        self._person.pop(conn, None)

    def __contains__(self, conn: object) -> bool:
        return conn in self._person

    def person_present(self) -> bool:
        """Whether a paired person's tool is connected (a declared role counts for nothing)."""
        return any(self._person.values())
