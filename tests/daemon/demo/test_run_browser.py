"""The browser demo's pure parts: which candidate is held for approval, and the summary."""

from __future__ import annotations

from webshepherd.daemon.demo.agent import Proposal
from webshepherd.daemon.demo.browser_steps import held_candidate, verdicts

GOOD = Proposal("progress", "click('1')", True)
BAD_A = Proposal("wrong link", "click('2')", False)
BAD_B = Proposal("title", "click('3')", False)


def test_the_worst_rewarded_bad_candidate_is_held():
    assert held_candidate([GOOD, BAD_A, BAD_B], [0.1, 0.6, 0.4]) == 2
    assert held_candidate([BAD_A, GOOD, BAD_B], [0.3, 0.0, 0.9]) == 0  # never the good one


def test_no_reward_counts_as_zero_and_ties_take_the_first():
    assert held_candidate([GOOD, BAD_A, BAD_B], [0.5, 0.2, None]) == 2
    assert held_candidate([GOOD, BAD_A, BAD_B], [0.5, 0.2, 0.2]) == 1


def test_verdicts_take_the_likeliest_label_per_item():
    result = {
        "items": [
            {"index": 1, "yes": 0.7, "in_progress": 0.2, "no": 0.1},
            {"index": 2, "yes": 0.1, "in_progress": 0.3, "no": 0.6},
        ]
    }
    assert verdicts(result) == {1: "yes", 2: "no"}
    assert verdicts({"items": None}) == {}
