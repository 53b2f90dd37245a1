"""What "step N" and "how many steps" mean: one rule for every surface.

The wire's ``step`` (docs/protocol.md) is the 0-based index of a session's observations: the
observation in ``session.start`` is step 0, each ``observe`` (or inline observation in
``score``) the next one, and ``scored``, ``approval.request``, ``action`` and ``label`` name
the step of the observation they were made on. Whatever a program reads keeps that index as
it is: the wire, the recording, the exports' ``step_id`` and OpenTelemetry's
``webshepherd.step``. Whatever a person reads (terminal lines, the overlay and side panel,
the TUI, the HTML report) names it :func:`step_label`, one more than the index; the
extension mirrors this in ``extension/src/steps.ts``.

A session has as many steps as it has indices where something was done: candidates scored
or an action recorded (:func:`step_count`). An observation alone (the page a finished task
ends on, a page looked at and left) is not a step.
"""

from __future__ import annotations

from collections.abc import Iterable


def step_number(step: int) -> int:
    """The number a person reads for the wire's step index ``step`` (index 0 is step 1)."""
    return step + 1


def step_label(step: int) -> str:
    """``"step N"`` for the wire's step index ``step``."""
    return f"step {step_number(step)}"


def step_count(scored: Iterable[int], acted: Iterable[int] = ()) -> int:
    """How many steps a session has: the distinct step indices at which candidates were
    scored or an action was recorded."""
    return len({*scored, *acted})
