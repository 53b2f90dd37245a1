"""Who refused a step or a paused request, why, and the way out, in one honest sentence.

Every integration, the agent loop and the SDK's log say a refusal the same way::

    refused by daemon (mode ask): this sends a POST to shop.test/orders; no person is
    paired ... — way out: `serve --sandbox-origin http://shop.test` (or ...), or pair ...
    refused by person monitor:laptop (mode ask): they gave no reason — final: a person
    refused this request; do not send it again

The decider is the daemon's ``DecisionInfo.decider`` (a person only when a paired person
decided, named by ``by``); the note and the way out are the daemon's words. A person's
refusal names no way out (it is final for that request: no "ask again", no looser mode),
and a missing note is said in words, never ``None``. The text carries page-derived parts
(URLs, a person's note): show it through
:func:`webshepherd.protocol.terminal_text.terminal_safe` in a terminal.
"""

from __future__ import annotations

from webshepherd.protocol.common import DecisionInfo

__all__ = ["PERSON_FINAL", "refusal_text", "refused", "who_refused"]

#: Decision statuses that leave a step (or a request) not run as asked.
_REFUSED = frozenset({"rejected", "timeout"})

#: What follows a person's refusal instead of a way out.
PERSON_FINAL = "final: a person refused this request; do not send it again"

#: What a refusal says when the daemon sent no note, by decider.
_NO_NOTE = {
    "person": "they gave no reason",
    "timeout": "nobody decided in time",
    "daemon": "nobody could decide",
    "mode": "the session's mode refuses it",
    "guard": "a guard rule holds it",
    "sandbox": "a sandbox origin",
}


def refused(decision: DecisionInfo) -> bool:
    """Whether ``decision`` keeps the step from running (rejected, or nobody answered)."""
    return decision.status in _REFUSED


def _decider(decision: DecisionInfo) -> str:
    """The decider's kind; an older daemon's (no ``decider``): ``timeout`` or ``daemon``."""
    if decision.decider is not None:
        return decision.decider
    return "timeout" if decision.status == "timeout" else "daemon"


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
    """``refused by <who> (<rule or mode>): <note> — way out: <way_out>``; after a person's
    refusal ``— final: ...`` instead (never a way out); ``action`` first when given. A
    decision that let the step run reads ``allowed by <who> ...`` (a sandbox origin's)."""
    head = f"{action}: " if action else ""
    kind = _decider(decision)
    note = decision.note or _NO_NOTE.get(kind, "no reason given")
    verb = "refused" if refused(decision) else "allowed"
    if verb == "allowed" or not (kind == "person" or decision.way_out):
        tail = ""
    elif kind == "person":
        tail = f" — {PERSON_FINAL}"
    else:
        tail = f" — way out: {decision.way_out}"
    return f"{head}{verb} by {who_refused(decision)} ({_rule(decision)}): {note}{tail}"
