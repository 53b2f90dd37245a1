"""The machine's collaborators type against MachineContext; a real SessionCore has every
member it names (mypy checks the types; this keeps a rename on either side from going
unnoticed at runtime too)."""

from __future__ import annotations

import inspect

from webshepherd.daemon.sessions.context import MachineContext

from tests.daemon.sessions.test_machine import make_core


def test_a_session_core_has_every_member_of_the_context() -> None:
    core = make_core()
    names = set(MachineContext.__annotations__) | {
        n
        for n, v in vars(MachineContext).items()
        if inspect.isfunction(v) and not n.startswith("_")
    }
    assert names >= {"sessions", "approvals", "clock", "get", "person_present"}
    assert [n for n in sorted(names) if not hasattr(core, n)] == []
    assert callable(core.get) and callable(core.person_present)
