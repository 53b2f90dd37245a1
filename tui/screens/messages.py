"""Messages screens send up to the app."""

from __future__ import annotations

from textual.message import Message
from webshepherd.protocol.common import CommitMode, Decision


class DecisionMade(Message):
    """A human decided an approval request (``action`` holds the edit; ``allow_origin``, a
    paused request's origin to allow for the rest of its session)."""

    def __init__(
        self,
        request_id: str,
        decision: Decision,
        action: str | None = None,
        *,
        allow_origin: str | None = None,
    ) -> None:
        super().__init__()
        self.request_id = request_id
        self.decision = decision
        self.action = action
        self.allow_origin = allow_origin  # approve and allow this origin (asked first)


class ReplayRequested(Message):
    """Open the recorded history of one session."""

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id


class ModeRequested(Message):
    """A person asked to switch a session's mode (what its commits get)."""

    def __init__(self, session_id: str, mode: CommitMode) -> None:
        super().__init__()
        self.session_id = session_id
        self.mode = mode
