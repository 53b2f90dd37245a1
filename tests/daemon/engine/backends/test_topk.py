"""Label masses from top-k log-probabilities (plain data in, exact numbers out)."""

from __future__ import annotations

import math

import pytest
from webshepherd.daemon.engine.backends.base import IN_PROGRESS, NO, YES
from webshepherd.daemon.engine.backends.topk import (
    label_group,
    mass_by_id,
    mass_by_piece,
    piece_token,
)


def test_label_group_reads_the_paper_variants() -> None:
    assert [label_group(p) for p in ("Yes", " Yes", "\nYes", " Done")] == [YES] * 4
    assert [label_group(p) for p in (" In", "Pending", "\nPartial")] == [IN_PROGRESS] * 3
    assert [label_group(p) for p in (" No", "Not", "\nWrong")] == [NO] * 3
    assert label_group("  Yes") is None and label_group("Yesterday") is None
    assert label_group(" the") is None and label_group("") is None


def test_mass_by_piece_sums_each_group() -> None:
    top = {
        " Yes": math.log(0.5),
        "Yes": math.log(0.125),
        " No": math.log(0.25),
        " In": math.log(0.0625),
        " the": math.log(0.03),
        "No_": None,
    }
    assert mass_by_piece(top) == pytest.approx((0.625, 0.0625, 0.25))
    assert mass_by_piece(None) == (0.0, 0.0, 0.0)
    assert mass_by_piece({" x": math.log(0.9)}) == (0.0, 0.0, 0.0)


def test_mass_by_id_uses_the_label_ids_only() -> None:
    groups = {7: YES, 8: YES, 9: NO, 10: IN_PROGRESS}
    top = {7: math.log(0.5), 9: math.log(0.2), 11: math.log(0.25), 10: math.log(0.05)}
    assert mass_by_id(top, groups) == pytest.approx((0.5, 0.05, 0.2))
    assert mass_by_id({}, groups) == (0.0, 0.0, 0.0)


def test_piece_token_keeps_the_text_and_the_group() -> None:
    tok = piece_token(" No", {" No": math.log(0.75), " Yes": math.log(0.25)})
    assert (tok.piece, tok.group) == (" No", NO)
    assert tok.mass == pytest.approx((0.25, 0.0, 0.75))
    assert piece_token("ok", None).group is None
