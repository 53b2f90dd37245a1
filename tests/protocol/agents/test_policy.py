"""Any callable or object is a policy: sync or async, bare propose or with refine and plan."""

from __future__ import annotations

import pytest
from webshepherd.protocol import Candidate
from webshepherd.protocol.agents import PageState, PolicyContext, PolicyError, as_policy
from webshepherd.protocol.errors import ErrorCode

STATE = PageState(url="http://x/", axtree="RootWebArea 'x'")
CONTEXT = PolicyContext("Buy a cable", samples=2)


def propose_strings(state: PageState, context: PolicyContext) -> list[str]:
    return [f"click('{context.samples}')", "click('1')"]


async def propose_async(state: PageState, context: PolicyContext) -> list[tuple[str, str]]:
    return [("Search.", f"goto('{state.url}')")]


class Planner:
    def propose(self, state: PageState, context: PolicyContext) -> Candidate:
        return Candidate(thought="one", action="go_back()")

    async def plan(self, intent: str, state: PageState) -> list[str]:
        return [f"Do {intent}"]


async def test_callables_and_objects_sync_or_async() -> None:
    got = await as_policy(propose_strings).propose(STATE, CONTEXT)
    assert got == [Candidate(action="click('2')"), Candidate(action="click('1')")]
    got = await as_policy(propose_async).propose(STATE, CONTEXT)
    assert got == [Candidate(thought="Search.", action="goto('http://x/')")]
    planner = as_policy(Planner())
    assert as_policy(planner) is planner
    assert await planner.propose(STATE, CONTEXT) == [Candidate(thought="one", action="go_back()")]
    assert planner.can_plan and not planner.can_refine
    assert await planner.plan("it", STATE) == ["Do it"]


async def test_missing_abilities_are_clear_errors() -> None:
    with pytest.raises(PolicyError, match="plan paradigm needs") as err:
        await as_policy(propose_strings).plan("x", STATE)
    assert err.value.code is ErrorCode.MODEL_ERROR
    with pytest.raises(PolicyError, match="proposed no action"):
        await as_policy(lambda state, context: []).propose(STATE, CONTEXT)
    with pytest.raises(TypeError, match="a policy is a callable"):
        as_policy(42)
