"""A session's checklist reads back as the event that carried it; a later one replaces it."""

from __future__ import annotations

from webshepherd.daemon.records.checklists import ChecklistRecord, read
from webshepherd.protocol.common import ChecklistItem
from webshepherd.protocol.replies import Checklist


def _checklist(*titles: str) -> Checklist:
    items = [ChecklistItem(index=i, title=t, goal=f"goal {i}") for i, t in enumerate(titles, 1)]
    return Checklist(session_id="s1", source="generated", items=items, text="\n".join(titles))


def test_the_latest_checklist_reads_back_as_its_event(rec) -> None:
    assert read(rec.db, "s1") is None
    first, second = _checklist("Find mugs"), _checklist("Search \u201cmug\u201d", "Add to cart")
    rec.apply(ChecklistRecord(first))
    assert read(rec.db, "s1") == first
    rec.apply(ChecklistRecord(second))
    assert read(rec.db, "s1") == second
    assert rec.db.execute("SELECT COUNT(*) FROM checklists").fetchone()[0] == 1
