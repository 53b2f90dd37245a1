"""Executed actions read back in recording order, for reports and for the machine."""

from __future__ import annotations

from webshepherd.daemon.records.actions import ActionRecord, Executed, read, turns
from webshepherd.protocol.common import Turn
from webshepherd.protocol.replies import ActionEvent


def test_actions_read_back_in_recording_order(rec) -> None:
    rec.apply_all(
        [
            ActionRecord(ActionEvent(session_id="s1", step=1, action="click('3')"), 3.0),
            ActionRecord(
                ActionEvent(session_id="s1", step=0, action="fill('2', 'mug')", thought="search"),
                2.0,
            ),
        ]
    )
    assert read(rec.db, "s1") == [
        Executed("click('3')", None, "agent", 3.0, 1),
        Executed("fill('2', 'mug')", "search", "agent", 2.0, 0),
    ]
    assert turns(rec.db, "s1") == (
        (1, Turn(thought="", action="click('3')")),  # no thought: the empty one
        (0, Turn(thought="search", action="fill('2', 'mug')")),
    )
    assert read(rec.db, "other") == [] and turns(rec.db, "other") == ()
