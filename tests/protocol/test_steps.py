"""The one rule for step numbers and step counts (protocol/steps.py)."""

from __future__ import annotations

from webshepherd.protocol.steps import step_count, step_label, step_number


def test_a_person_reads_one_more_than_the_wire_index():
    assert [step_number(i) for i in (0, 1, 9)] == [1, 2, 10]
    assert step_label(0) == "step 1"


def test_a_step_is_an_index_scored_or_acted_at():
    assert step_count([]) == 0
    # scored at 0 and 1, acted at 0, 1 and 2 (an action recorded without a score)
    assert step_count([0, 1, 1], [0, 1, 2]) == 3
    # an index only observed (the final page) is not a step: it is in neither list
    assert step_count([0, 2]) == 2
