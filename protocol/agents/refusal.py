"""A refusal as an agent keeps it: the sentence (:mod:`webshepherd.protocol.refusal`, its
home, which the SDK's log shares) and the plain data beside it (``info["webshepherd"]``,
AgentInfo)."""

from __future__ import annotations

from webshepherd.protocol.common import DecisionInfo
from webshepherd.protocol.refusal import refusal_text, refused, who_refused

__all__ = ["refusal_info", "refusal_text", "refused", "who_refused"]


def refusal_info(decision: DecisionInfo, action: str | None = None) -> dict[str, object]:
    """The refusal as plain data (``info["webshepherd"]`` and AgentInfo keep it)."""
    return {
        "action": action if action is not None else decision.action,
        "decision": decision.status,
        "decider": decision.decider,
        "by": decision.by,
        "note": decision.note,
        "way_out": None if decision.decider == "person" else decision.way_out,
        "mode": decision.mode,
        "guard": sorted({hit.rule for hit in decision.guard}),
        "text": refusal_text(decision, action),
    }
