"""What the session machine and the recorder exchange, in one package both may import (the
import contracts keep ``daemon.sessions`` and ``daemon.recorder`` independent).

One module per recorded kind (or kinds writing one table): its frozen record, which the
machine returns as an effect (sans-I/O), the DDL of its tables, its write and its reads
(``records/kind.py`` states the shape). A record that has a wire message carries it (the
event the machine publishes, or the request), plus only what that lacks, so each fact is
stated once; ``op`` names the kind (logs and tests). :data:`KINDS` is the one registry: the
recorder builds its schema from it and dispatches each record through it. A new kind is a
new module here plus its lines in this file (the imports, :data:`KINDS`, :data:`Record`,
``__all__``); its mirrored test is ``tests/daemon/records/test_<module>.py``.

The read back: :class:`StoredSession` (``records/stored.py``), what
:meth:`History.stored_session` reads for the machine to resume a session after a restart.
"""

from __future__ import annotations

from typing import Any

from webshepherd.daemon.records import (
    actions,
    approvals,
    checklists,
    events,
    labels,
    observations,
    scores,
    sessions,
    tree_nodes,
)
from webshepherd.daemon.records.actions import ActionRecord
from webshepherd.daemon.records.approvals import ApprovalDecidedRecord, ApprovalRequestedRecord
from webshepherd.daemon.records.checklists import ChecklistRecord
from webshepherd.daemon.records.events import EventRecord
from webshepherd.daemon.records.kind import RecordKind, by_class, kind_of
from webshepherd.daemon.records.labels import LabelRecord
from webshepherd.daemon.records.observations import ObservationRecord
from webshepherd.daemon.records.scores import ScoreDecisionRecord, ScoreRecord
from webshepherd.daemon.records.sessions import (
    ScorerRecord,
    SessionEndedRecord,
    SessionStartedRecord,
)
from webshepherd.daemon.records.stored import StoredScore, StoredSession
from webshepherd.daemon.records.tree_nodes import TreeNodeRecord

KINDS: tuple[RecordKind[Any], ...] = (
    *sessions.KINDS,
    *checklists.KINDS,
    *observations.KINDS,
    *scores.KINDS,
    *approvals.KINDS,
    *actions.KINDS,
    *events.KINDS,
    *labels.KINDS,
    *tree_nodes.KINDS,
)
"""Every recorded kind, in the order their tables are created."""

BY_CLASS = by_class(KINDS)

Record = (
    SessionStartedRecord
    | ObservationRecord
    | ChecklistRecord
    | ScoreRecord
    | ScoreDecisionRecord
    | ApprovalRequestedRecord
    | ApprovalDecidedRecord
    | ActionRecord
    | LabelRecord
    | TreeNodeRecord
    | SessionEndedRecord
    | ScorerRecord
    | EventRecord
)
"""Any write of the session machine (its members are :data:`KINDS`' record classes: a test
holds them equal)."""


def kind_for(record: Record) -> RecordKind[Any]:
    """The kind that writes ``record`` (a record of no kind is refused, naming its class)."""
    return kind_of(BY_CLASS, record)


__all__ = [
    "KINDS",
    "ActionRecord",
    "ApprovalDecidedRecord",
    "ApprovalRequestedRecord",
    "ChecklistRecord",
    "EventRecord",
    "LabelRecord",
    "ObservationRecord",
    "Record",
    "RecordKind",
    "ScoreDecisionRecord",
    "ScoreRecord",
    "ScorerRecord",
    "SessionEndedRecord",
    "SessionStartedRecord",
    "StoredScore",
    "StoredSession",
    "TreeNodeRecord",
    "kind_for",
]
