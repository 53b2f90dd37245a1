"""A search tree reads back as its nodes' latest updates and the latest path; the machine
resumes from each node as first recorded; no rows (or no table) is no tree."""

from __future__ import annotations

from webshepherd.daemon.records.tree_nodes import TreeNodeRecord, read, stored
from webshepherd.protocol.replies import TreeNodeEvent


def _node(node: int, parent: int | None, depth: int, action: str | None, **kw) -> TreeNodeEvent:
    return TreeNodeEvent(
        session_id="s1", node=node, parent=parent, depth=depth, action=action, **kw
    )


def test_a_tree_reads_back_as_its_latest_updates_and_path(rec) -> None:
    assert read(rec.db, "s1") is None and stored(rec.db, "s1") == ()
    updates = [
        _node(0, None, 0, None, status="expanded", event="expanded"),
        _node(1, 0, 1, "click('3')", status="frontier", event="scored", reward=0.4),
        _node(2, 0, 1, "click('4')", status="frontier", event="scored", reward=0.8),
        _node(2, 0, 1, "click('4')", status="done", event="executed", executed=True),
        _node(0, None, 0, None, status="expanded", event="path"),
        _node(2, 0, 1, "click('4')", status="done", event="path", executed=True),
    ]
    rec.apply_all([TreeNodeRecord(u, 10.0 + i) for i, u in enumerate(updates)])
    tree = read(rec.db, "s1")
    assert tree is not None
    assert [(n.node, n.status, n.event) for n in tree.nodes] == [
        (0, "expanded", "path"),
        (1, "frontier", "scored"),
        (2, "done", "path"),
    ]
    assert tree.path == [0, 2] and tree.updates == {0: 2, 1: 1, 2: 3}
    assert tree.updated_at == {0: 14.0, 1: 11.0, 2: 15.0}
    assert [n.node for n in tree.children(0)] == [1, 2] and tree.node(2).executed  # type: ignore[union-attr]
    assert stored(rec.db, "s1") == (
        (0, None, 0, None),
        (1, 0, 1, "click('3')"),
        (2, 0, 1, "click('4')"),
    )
    rec.db.execute("DROP TABLE tree_nodes")  # as a recording made before trees
    assert read(rec.db, "s1") is None
