"""The 1-5 baseline judge's output read as the authors' ``get_score`` reads it."""

from __future__ import annotations

import pytest
from webshepherd.daemon.engine.backends.base import Generation
from webshepherd.daemon.engine.likert import likert_score, score_likert


def _gen(text: str, finish: str = "stop") -> Generation:
    return Generation(text=text, tokens=(), finish_reason=finish)


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("REASON: It opens the search box.\nSCORE: 4", 4),
        ("REASON: fine\nSCORE: [3]\nSCORE: 5", 3),  # the first SCORE: line
        ("REASON: step 2 helps. SCORE 5", 2),  # no colon: the first integer of the whole text
        ("REASON: x\nSCORE: high\n5", None),  # nothing on the SCORE: line
        ("REASON: no score at all, 5 stars", None),
        ("SCORE: -1", -1),
    ],
)
def test_the_score_is_the_integer_the_authors_read(text: str, score: int | None) -> None:
    assert likert_score(text) == score


def test_rewards_are_score_over_five_with_the_unparsed_rule() -> None:
    gens = [_gen("REASON: good\nSCORE: 5"), _gen("REASON: hm\nSCORE: 2"), _gen("REASON: none")]
    skip = score_likert(0, gens)
    assert skip.reward == pytest.approx((1.0 + 0.4) / 2)
    assert skip.parsed_samples == 2 and skip.unparsed_samples == 1
    assert skip.feedback == "good" and skip.samples[2].unparsed == "no_answer"
    zero = score_likert(0, gens, unparsed="zero")  # the authors': a missing score is 0
    assert zero.reward == pytest.approx((1.0 + 0.4 + 0.0) / 3)
    cut = score_likert(1, [_gen("REASON: long", "length")])
    assert cut.reward is None and cut.samples[0].unparsed == "cut_by_context"
    assert "no SCORE line" in cut.feedback
