"""The SQLite recording of sessions: writes (:class:`Recorder`) and reads (:class:`History`)."""

from webshepherd.daemon.recorder.history import History
from webshepherd.daemon.recorder.store import Recorder

__all__ = ["History", "Recorder"]
