"""Ground-truth labels read back per step in recording order, with who gave them; a recording
made before labels were kept reads none."""

from __future__ import annotations

from webshepherd.daemon.records.labels import LabelRecord, TruthLabel, read
from webshepherd.protocol.requests import Label


def test_labels_read_back_with_who_knew_the_truth(rec) -> None:
    first = Label(
        id="a", session_id="s1", step=2, action="click('4')", items=["yes", "no"], source="person"
    )
    second = first.model_copy(update={"items": ["yes", "yes"], "note": "it did add it"})
    env = Label(
        id="b", session_id="s1", step=1, action="scroll(0, 300)", items=["in_progress", "no"],
        source="environment",
    )  # fmt: skip
    rec.apply_all([LabelRecord(first, "monitor:ann", 5.0), LabelRecord(env, "agent:bot", 6.0)])
    rec.apply(LabelRecord(second, "monitor:ann", 7.0))
    ann, bot = "monitor:ann", "agent:bot"
    assert read(rec.db, "s1") == [
        (2, TruthLabel("click('4')", ["yes", "no"], "person", ann, None, 5.0)),
        (1, TruthLabel("scroll(0, 300)", ["in_progress", "no"], "environment", bot, None, 6.0)),
        (2, TruthLabel("click('4')", ["yes", "yes"], "person", ann, "it did add it", 7.0)),
    ]
    rec.db.execute("DROP TABLE labels")  # as a recording made before labels
    assert read(rec.db, "s1") == []
