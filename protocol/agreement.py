"""Judge–person agreement: how a person's decisions on held steps compare with the judge's
rewards. Sans-I/O, one home: the TUI's state fold and the HTML report both count with it.

Only a person's decision counts (:func:`by_person`): ``approve``, ``reject`` or ``edit`` sent
by a person's tool (``approval.resolved.by`` names a deciding role: ``extension:…`` or
``monitor:…``). A timeout, a default the daemon applied, or a guard's refusal with nobody
connected is no decision of a person's, and counts nowhere.

What is counted, per decision on a held candidate:

- the judge's top pick (the step's best reward): approved as it was, or not (an edit replaces
  the action, so it does not approve the top pick);
- a high reward (at or above the approval threshold in force when the step was held):
  rejected or edited away;
- a low reward (below that threshold, or none parsed, as the policy reads it): approved.

A decision held without a threshold (none configured) counts only for the top pick.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeGuard

PersonDecision = Literal["approve", "reject", "edit"]
#: The roles whose connections decide as a person (the daemon's deciding roles).
PERSON_ROLES = frozenset({"extension", "monitor"})


def by_person(decision: str | None, by: str | None) -> TypeGuard[PersonDecision]:
    """Whether a recorded decision is a person's: approve, reject or edit, by a connection of a
    deciding role (``by`` is ``<role>:<client name>[/<via>]``)."""
    if decision not in ("approve", "reject", "edit") or not by:
        return False
    role, sep, _ = by.partition(":")
    return bool(sep) and role in PERSON_ROLES


@dataclass(frozen=True)
class Decided:
    """One person's decision on a held candidate, with what the judge said of it."""

    decision: PersonDecision
    reward: float | None  # the held candidate's reward
    top_pick: bool | None  # it was the judge's top pick at its step (None: not known)
    threshold: float | None  # the approval threshold in force (None: none)


@dataclass(frozen=True)
class Agreement:
    """Counts of a person's decisions against the judge's rewards."""

    decisions: int = 0
    approved: int = 0
    rejected: int = 0
    edited: int = 0
    top_picks: int = 0  # decisions on the judge's top pick
    top_approved: int = 0  # ... approved as they were
    high: int = 0  # decisions on a reward at or above the threshold
    high_rejected: int = 0  # ... rejected or edited
    low: int = 0  # decisions on a reward below the threshold (or none)
    low_approved: int = 0  # ... approved (as they were)

    def line(self) -> str:
        """The counts in one line, as the TUI shows them (an edit counts as rejected)."""
        if not self.decisions:
            return "judge–person agreement: no decisions by a person yet"
        n = f"{self.decisions} decision{'s' if self.decisions != 1 else ''} by a person"
        parts = [
            f"{what} {k}/{of}"
            for what, k, of in (
                ("top pick approved", self.top_approved, self.top_picks),
                ("high reward rejected", self.high_rejected, self.high),
                ("low reward approved", self.low_approved, self.low),
            )
            if of  # a count of nothing says nothing (issue 51: "0/0 · 0/0 · 0/0")
        ]
        if not parts:
            return f"judge–person agreement ({n}): none on a step the judge scored yet"
        return f"judge–person agreement ({n}): " + " · ".join(parts)


def agreement(decisions: Iterable[Decided]) -> Agreement:
    """Count ``decisions`` (a person's only: filter with :func:`by_person` first)."""
    n = approved = rejected = edited = 0
    top = top_ok = high = high_no = low = low_ok = 0
    for d in decisions:
        n += 1
        ok = d.decision == "approve"
        approved += ok
        rejected += d.decision == "reject"
        edited += d.decision == "edit"
        if d.top_pick:
            top += 1
            top_ok += ok
        if d.threshold is None:
            continue
        if d.reward is not None and d.reward >= d.threshold:
            high += 1
            high_no += not ok
        else:
            low += 1
            low_ok += ok
    return Agreement(n, approved, rejected, edited, top, top_ok, high, high_no, low, low_ok)
