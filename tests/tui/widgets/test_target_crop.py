"""The target cut out of a screenshot, as terminal half blocks."""

from __future__ import annotations

import base64

from webshepherd.tui.widgets.target_crop import target_crop

from tests.tui.widgets.test_approvals_table import BOX, RED, screenshot


def test_the_crop_keeps_the_target_its_margin_and_an_outline() -> None:
    picture = target_crop(screenshot(), BOX, 200, 100)  # room enough: not scaled
    assert picture is not None
    rows = picture.plain.split("\n")
    assert [len(r) for r in rows] == [132] * 36  # 100 + 2 * 16 pixels wide, (40 + 32) / 2 high
    fg = [tuple(s.style.color.triplet) for s in picture.spans]  # type: ignore[union-attr]
    assert fg[0] == (255, 255, 255)  # the margin: the page around the target
    assert fg[18 * 132 + 66] == RED  # the target's middle
    assert fg[18 * 132 + 15] == (255, 200, 0)  # the outline, just left of the target
    above = picture.spans[7 * 132 + 66].style.bgcolor  # type: ignore[union-attr]
    assert above is not None and tuple(above.triplet) == (255, 200, 0)  # and just above it
    assert target_crop(screenshot(), [900, 900, 10, 10], 80, 10) is None  # off the page
    assert target_crop(base64.b64encode(b"not an image").decode(), BOX, 80, 10) is None
    assert target_crop("%%%", BOX, 80, 10) is None
