"""The per-session views: a decided paused request's outcome, as "Requests decided" tells them
apart (the extension's ``decidedOutcome`` in session-views.ts)."""

from __future__ import annotations

import pytest
from webshepherd.protocol.common import DecisionInfo, HeldRequest
from webshepherd.tui.views import CommitView

REQUEST = HeldRequest(method="POST", url="http://shop.test/o", kind="write")


@pytest.mark.parametrize(
    ("status", "flagged", "outcome"),
    [
        ("approved", False, "approved"),
        ("edited", False, "approved"),
        ("auto", False, "approved"),
        ("approved", True, "flagged"),
        ("rejected", False, "refused"),
        ("timeout", False, "refused"),
    ],
)
def test_a_decided_request_is_approved_flagged_or_refused(
    status: str, flagged: bool, outcome: str
) -> None:
    decision = DecisionInfo.model_validate({"status": status})
    assert CommitView(REQUEST, decision, flagged).outcome == outcome
