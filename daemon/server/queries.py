"""Read-only queries: ``sessions.list`` and ``session.get`` from the recording, a loaded
session's summary as the session machine has it now."""

from __future__ import annotations

from webshepherd.daemon.recorder import History
from webshepherd.daemon.sessions import SessionCore
from webshepherd.protocol import requests as rq
from webshepherd.protocol.common import SessionSummary
from webshepherd.protocol.errors import UnknownSessionError
from webshepherd.protocol.replies import Session
from webshepherd.protocol.union import dump


class Queries:
    """Answers the read-only requests; ``history`` is set once the daemon starts."""

    def __init__(self, core: SessionCore, max_frame_bytes: int) -> None:
        self.core = core
        self.max_frame_bytes = max_frame_bytes
        self.history: History | None = None

    def sessions(self, limit: int) -> list[SessionSummary]:
        """The latest ``limit`` sessions, the loaded ones as they are now."""
        assert self.history is not None
        return [self.core.summary(s.session_id) or s for s in self.history.list_sessions(limit)]

    def session_get(self, msg: rq.SessionGet) -> str:
        """The ``session`` reply as a frame: as many events from ``after`` on as fit half
        the frame limit (at least one), ``next`` set when more remain."""
        assert self.history is not None
        summary = self.history.summary(msg.session_id)
        if summary is None:
            raise UnknownSessionError(f"session_id: no session {msg.session_id!r}")
        summary = self.core.summary(msg.session_id) or summary
        events, more = self.history.page(msg.session_id, msg.after, self.max_frame_bytes // 2)
        reply = Session(
            id=msg.id,
            session=summary,
            checklist=self.history.checklist(msg.session_id),
            events=events,
            next=more,
        )
        return dump(reply)
