"""A tree search's nodes: one ``tree_nodes`` row per update (``tree.node``), appended, never
replaced, so the recording keeps every state a node went through."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import ClassVar

from webshepherd.daemon.records.kind import Record, RecordKind, insert, table_rows
from webshepherd.protocol.common import TreeNodeFields
from webshepherd.protocol.replies import TreeNodeEvent

TABLES = """
CREATE TABLE IF NOT EXISTS tree_nodes (
    id INTEGER PRIMARY KEY,         -- one row per update (tree.node), in arrival order
    session_id TEXT NOT NULL REFERENCES sessions(session_id),
    node INTEGER NOT NULL,          -- the node's id in the session's search tree (root 0)
    parent INTEGER,                 -- null for the root
    depth INTEGER NOT NULL,
    action TEXT,                    -- the action from its parent (null for the root)
    thought TEXT,
    reward REAL,                    -- its value: the judge's reward for the action
    count INTEGER NOT NULL,         -- policy proposals of the action
    status TEXT NOT NULL,           -- frontier / expanded / leaf / done / failed / stale
    executed INTEGER NOT NULL,      -- 1: its action ran first-hand
    replays INTEGER NOT NULL,       -- times its action ran again (backtracking)
    step INTEGER,                   -- the scored step its action was a candidate of
    expanded_at INTEGER,            -- the step at which its children were scored
    url TEXT,
    error TEXT,
    event TEXT NOT NULL,            -- scored / replayed / executed / expanded / stale / path
    trying INTEGER,                 -- the node the search was trying
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS tree_nodes_by_session ON tree_nodes(session_id, node);
"""
# the event's fields kept as they are (executed is stored as 0/1, created_at is the record's)
_COLUMNS = {
    "session_id", "node", "parent", "depth", "action", "thought", "reward", "count", "status",
    "replays", "step", "expanded_at", "url", "error", "event", "trying",
}  # fmt: skip


@dataclass(frozen=True)
class TreeNodeRecord(Record):
    """One update of a tree search's node (``tree.node``): appended, never replaced, so the
    recording keeps every state a node went through (the latest per node is its state)."""

    op: ClassVar[str] = "tree_node"
    event: TreeNodeEvent
    created_at: float


def _write(db: sqlite3.Connection, r: TreeNodeRecord) -> None:
    e = r.event
    fields = e.model_dump(include=_COLUMNS)
    insert(db, "tree_nodes", fields | {"executed": int(e.executed), "created_at": r.created_at})


KIND = RecordKind(TreeNodeRecord, _write, TABLES)
KINDS = (KIND,)


@dataclass
class RecordedTree:
    """A session's search tree as recorded (``tree.node``): every node as its latest update
    left it (the wire's :class:`TreeNodeFields`, in node order), the path the search returned
    (node ids, root first; empty while it runs or when it never said), and per node how many
    updates it had and when the latest was recorded. The search's own tree, with its budgets
    and stop, is ``protocol.agents.SearchTree``."""

    nodes: list[TreeNodeFields] = field(default_factory=list)
    path: list[int] = field(default_factory=list)
    updates: dict[int, int] = field(default_factory=dict)  # node -> updates recorded
    updated_at: dict[int, float] = field(default_factory=dict)  # node -> the latest's time

    def node(self, node_id: int) -> TreeNodeFields | None:
        return next((n for n in self.nodes if n.node == node_id), None)

    def children(self, node_id: int) -> list[TreeNodeFields]:
        return [n for n in self.nodes if n.parent == node_id]


def read(db: sqlite3.Connection, session_id: str) -> RecordedTree | None:
    """Every node's latest update, and the path of the latest ``path`` updates (root first);
    None when the session has no tree (or the recording was made before trees were kept)."""
    tree = RecordedTree()
    nodes: dict[int, TreeNodeFields] = {}
    path: dict[int, int] = {}  # depth -> node of the path
    for r in table_rows(
        db, "SELECT * FROM tree_nodes WHERE session_id = ? ORDER BY id", (session_id,)
    ):
        n = nodes[r["node"]] = TreeNodeFields.model_validate(
            {k: r[k] for k in TreeNodeFields.model_fields}
        )
        tree.updates[n.node] = tree.updates.get(n.node, 0) + 1
        tree.updated_at[n.node] = r["created_at"]
        if n.event == "path":
            if n.depth == 0:
                path.clear()  # a new path starts at the root
            path[n.depth] = n.node
    if not nodes:
        return None
    tree.nodes = [nodes[k] for k in sorted(nodes)]
    tree.path = [path[d] for d in sorted(path)]
    return tree


def stored(
    db: sqlite3.Connection, session_id: str
) -> tuple[tuple[int, int | None, int, str | None], ...]:
    """The tree's nodes as first recorded, ``(node, parent, depth, action)`` in node order
    (what the machine resumes a search with)."""
    return tuple(
        (n["node"], n["parent"], n["depth"], n["action"])
        for n in db.execute(
            "SELECT node, parent, depth, action FROM tree_nodes WHERE id IN "
            "(SELECT MIN(id) FROM tree_nodes WHERE session_id = ? GROUP BY node) "
            "ORDER BY node",
            (session_id,),
        )
    )
