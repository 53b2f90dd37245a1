"""Who refused a step or a paused request, why, and the way out, in one sentence.

Every integration and the agent loop say a refusal the same way::

    refused by daemon (mode ask): POST to shop.test/orders; no person is paired ... — way out:
    `serve --sandbox-origin http://shop.test` (or `serve --mode watch`), or pair ...

The decider is the daemon's ``DecisionInfo.decider`` (a person only when a paired person
decided, named by ``by``); the note and the way out are the daemon's words. The text carries
page-derived parts (URLs, a person's note): show it through
:func:`webshepherd.protocol.terminal_text.terminal_safe` in a terminal.
"""

from __future__ import annotations

from webshepherd.protocol.common import DecisionInfo

__all__ = ["refusal_info", "refusal_text", "refused", "who_refused"]

#: Decision statuses that leave a step (or a request) not run as asked.
_REFUSED = frozenset({"rejected", "timeout"})


def refused(decision: DecisionInfo) -> bool:
    """Whether ``decision`` keeps the step from running (rejected, or nobody answered)."""
    return decision.status in _REFUSED


def who_refused(decision: DecisionInfo) -> str:
    """The decider as a reader sees it: ``person <name>`` only when a person decided; the
    daemon's own kinds (``daemon``, ``guard``, ``mode``, ``timeout``, ``sandbox``) otherwise.
    A daemon that sends no decider (older than issue 41) is named by ``by`` as it is."""
    if decision.decider == "person":
        return f"person {decision.by}" if decision.by else "person"
    if decision.decider is not None:
        return decision.decider
    if decision.status == "timeout":
        return "timeout"
    return decision.by or "daemon"


def _rule(decision: DecisionInfo) -> str:
    """What the refusal went by: the guard rules met, else the session's mode."""
    rules = sorted({hit.rule for hit in decision.guard})
    if rules:
        return "guard " + ", ".join(rules)
    if decision.mode is not None:
        return f"mode {decision.mode}"
    return decision.status


def refusal_text(decision: DecisionInfo, action: str | None = None) -> str:
    """``refused by <who> (<rule or mode>): <note> — way out: <way_out>`` (the way out only
    when the daemon named one); ``action`` first when given."""
    head = f"{action}: " if action else ""
    note = decision.note or "no reason given"
    way = f" — way out: {decision.way_out}" if decision.way_out else ""
    return f"{head}refused by {who_refused(decision)} ({_rule(decision)}): {note}{way}"


def refusal_info(decision: DecisionInfo, action: str | None = None) -> dict[str, object]:
    """The refusal as plain data (``info["webshepherd"]`` and AgentInfo keep it)."""
    return {
        "action": action if action is not None else decision.action,
        "decision": decision.status,
        "decider": decision.decider,
        "by": decision.by,
        "note": decision.note,
        "way_out": decision.way_out,
        "mode": decision.mode,
        "guard": sorted({hit.rule for hit in decision.guard}),
        "text": refusal_text(decision, action),
    }
