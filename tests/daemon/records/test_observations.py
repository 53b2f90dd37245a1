"""Observations read back per step with their boxes, the latest one and the AX tree seen last
at a step; each raises the session's step count; a recording made before boxes reads none.
(A big AX tree written in pieces: tests/daemon/recorder/test_store.py.)"""

from __future__ import annotations

from webshepherd.daemon.records.observations import ObservationRecord, axtree_at, latest, read
from webshepherd.protocol.common import Screenshot
from webshepherd.protocol.replies import Observed

BOXES = {"12": [10.0, 20.0, 30.0, 40.0]}


def _seen(step: int, axtree: str, at: float, **kw) -> ObservationRecord:
    event = Observed(session_id="s1", step=step, url=f"http://shop.local/{step}", axtree=axtree)
    return ObservationRecord(event, None, at, **kw)


def test_observations_read_back_in_order_with_their_boxes(rec) -> None:
    shot = Observed(
        session_id="s1", step=1, url="http://shop.local/1", axtree="[12] button 'Add'",
        screenshot=Screenshot(mime="image/png"),
    )  # fmt: skip
    assert latest(rec.db, "s1") is None and axtree_at(rec.db, "s1", 0) == ""
    rec.apply_all(
        [
            _seen(0, "[1] link 'Mugs'", 2.0),
            ObservationRecord(shot, b"\x89PNG", 3.0, boxes=BOXES),
            _seen(0, "[1] link 'Mugs (2)'", 4.0),  # step 0 again: seen last wins on read
        ]
    )
    assert read(rec.db, "s1") == [
        (0, "http://shop.local/0", "[1] link 'Mugs'", None, None, 2.0, None),
        (1, "http://shop.local/1", "[12] button 'Add'", b"\x89PNG", "image/png", 3.0, BOXES),
        (0, "http://shop.local/0", "[1] link 'Mugs (2)'", None, None, 4.0, None),
    ]
    assert latest(rec.db, "s1") == (0, "http://shop.local/0", "[1] link 'Mugs (2)'")
    assert axtree_at(rec.db, "s1", 1) == "[12] button 'Add'"
    assert axtree_at(rec.db, "s1", 0) == "[1] link 'Mugs (2)'"
    assert rec.db.execute("SELECT steps FROM sessions").fetchone()[0] == 2
    rec.db.execute("DROP TABLE observation_boxes")  # as a recording made before boxes
    assert [s[6] for s in read(rec.db, "s1")] == [None, None, None]
