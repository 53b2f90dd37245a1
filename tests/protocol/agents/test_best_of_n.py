"""Reward-guided best-of-n: the pure selection on plain data, then against a real daemon."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from webshepherd.protocol import Candidate, DecisionInfo, Observation
from webshepherd.protocol.agents import best_of_n, best_of_n_sync, group_proposals, select
from webshepherd.protocol.agents.best_of_n import action_key, decide
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.client.sync import Client

from tests.fixtures.daemon import TEST_TOKEN, DaemonHandle
from tests.protocol.client.test_async_client import client

CHECKLIST = "Checklist 1: Search for USB-C cables\nChecklist 2: Open the cheapest"
OBS = Observation(
    url="http://shop.test/",
    axtree=(
        "RootWebArea 'Shop', focused\n\t[12] searchbox 'Search products'\n\t[13] button 'Search'"
    ),
)
# Twelve sampled answers: fill x4 (two spellings), click('13') x4, click('40') x3, scroll x1.
PROPOSALS = [
    ("The search box is [12].", "fill('12', 'usb-c cable')"),
    ("Deals may be cheaper.", "click('40')"),
    ("Run the search.", "click('13')"),
    ("The search box is [12].", 'fill( "12", "usb-c cable" )'),
    ("Run the search.", "click('13')"),
    ("Deals may be cheaper.", "click('40')"),
    ("Scroll first.", "scroll(0, 400)"),
    ("The search box is [12].", "fill('12',  'usb-c cable')"),
    ("Run the search.", 'click("13")'),
    ("Deals may be cheaper.", "click('40')"),
    ("Run the search.", "click('13')"),
    ("The search box is [12].", "fill('12', 'usb-c cable')"),
]


# -- pure ----------------------------------------------------------------------------------


def test_counting_normalises_whitespace_and_quote_style() -> None:
    assert action_key('fill( "12", "usb-c cable" )') == action_key("fill('12','usb-c cable')")
    assert action_key("click('b22', button=\"right\")") == "click('b22', button='right')"
    assert action_key("fill('3', \"it's\")") != action_key("fill('3', 'its')")
    assert action_key("not  an\taction") == "not an action"  # unparsable: whitespace only


def test_groups_are_most_frequent_first_then_first_proposed() -> None:
    groups = group_proposals(PROPOSALS)
    assert [(g.candidate.action, g.count, g.first) for g in groups] == [
        ("fill('12', 'usb-c cable')", 4, 0),  # tied with click('13') at 4, proposed first
        ("click('13')", 4, 2),
        ("click('40')", 3, 1),
        ("scroll(0, 400)", 1, 6),
    ]
    assert [g.candidate.action for g in group_proposals(PROPOSALS, top_n=2)] == [
        "fill('12', 'usb-c cable')",
        "click('13')",
    ]


@pytest.mark.parametrize(
    ("rewards", "counts", "firsts", "want"),
    [
        ([0.2, 0.7, 0.5], [5, 1, 9], [0, 1, 2], 1),  # highest reward wins whatever the counts
        ([0.6, 0.6, 0.1], [2, 3, 9], [0, 1, 2], 1),  # reward tie: the more frequent
        ([0.6, 0.6, 0.6], [3, 3, 1], [4, 2, 0], 1),  # reward and count tie: proposed first
        ([None, 0.01, None], [9, 1, 9], [0, 1, 2], 1),  # any reward beats no reward
        ([None, None, None], [1, 4, 4], [0, 5, 3], 2),  # no reward at all: frequency, first
        ([0.0, None], [1, 7], [1, 0], 0),  # a zero reward still counts as scored
    ],
)
def test_selection(rewards: list[Any], counts: list[int], firsts: list[int], want: int) -> None:
    assert select(rewards, counts, firsts) == want


def test_decisions_are_honoured() -> None:
    cands = [
        Candidate(thought="a", action="click('1')"),
        Candidate(thought="b", action="click('2')"),
    ]
    assert decide(cands, 1, DecisionInfo(status="auto", index=1, action="click('2')")) == cands[1]
    approved = DecisionInfo(status="approved", index=1, action="click('2')", by="monitor:tui")
    assert decide(cands, 1, approved) == cands[1]
    edited = decide(cands, 1, DecisionInfo(status="edited", index=1, action="click('9')"))
    assert edited == Candidate(thought="b", action="click('9')")
    assert decide(cands, 1, DecisionInfo(status="rejected", index=1, action=None)) is None
    assert decide(cands, 1, DecisionInfo(status="timeout", index=1, action=None)) is None
    timeout_ok = DecisionInfo(status="timeout", index=1, action="click('2')")
    assert decide(cands, 1, timeout_ok) == cands[1]


# -- with the daemon ---------------------------------------------------------------------


@pytest.mark.model
async def test_best_of_n_scores_the_top_n_and_picks_by_reward_then_frequency(
    daemon: DaemonHandle,
) -> None:
    async with client(daemon) as c:
        session = await c.start_session("Buy a cable", checklist=CHECKLIST, observation=OBS)
        got = await best_of_n(session, PROPOSALS, top_n=3, samples=1, approval="never")
    assert [x.action for x in got.candidates] == [
        "fill('12', 'usb-c cable')",
        "click('13')",
        "click('40')",
    ]
    assert got.counts == [4, 4, 3]
    assert got.rewards == [r.reward for r in sorted(got.scored.results, key=lambda r: r.index)]
    assert got.index == select(got.rewards, got.counts, [0, 2, 1])
    scored = [r for r in got.rewards if r is not None]
    if scored:
        assert got.reward == max(scored)
        tied = [i for i, r in enumerate(got.rewards) if r == got.reward]
        assert got.index == min(tied, key=lambda i: (-got.counts[i], i))
    assert got.index == (got.scored.best if got.scored.best is not None else 0)
    assert got.decision.status == "auto" and not got.rejected
    assert got.chosen == got.candidates[got.index]


async def _decide_next_request(
    mon: AsyncClient, sub: Any, decision: str, action: str | None = None
) -> Any:
    while True:
        event = await sub.get(timeout=60)
        if event.type == "approval.request":
            await mon.decide(event.request_id, decision, action=action)  # type: ignore[arg-type]
            return event


@pytest.mark.model
@pytest.mark.parametrize("decision", ["approve", "edit", "reject"])
async def test_a_persons_decision_is_honoured(daemon: DaemonHandle, decision: str) -> None:
    async with (
        client(
            daemon, role="monitor", name="tui", approver=await daemon.approver("monitor", "tui")
        ) as mon,
        client(daemon) as agent,
    ):
        sub = await mon.subscribe("*").start()
        session = await agent.start_session("Buy a cable", checklist=CHECKLIST, observation=OBS)
        edit = "click('77')" if decision == "edit" else None
        task = asyncio.create_task(
            best_of_n(session, PROPOSALS, top_n=2, samples=1, approval="always")
        )
        request = await _decide_next_request(mon, sub, decision, edit)
        got = await asyncio.wait_for(task, 60)
    picked = got.candidates[got.index]
    assert request.candidate.action == picked.action  # the person saw this pick
    if decision == "approve":
        assert got.decision.status == "approved" and got.chosen == picked
    elif decision == "edit":
        assert got.decision.status == "edited" and got.edited
        assert got.chosen == Candidate(thought=picked.thought, action="click('77')")
    else:
        assert got.decision.status == "rejected" and got.rejected and got.chosen is None


@pytest.mark.model
async def test_sync_twin(daemon: DaemonHandle) -> None:
    def blocking() -> Any:
        with Client(daemon.url, token=TEST_TOKEN) as c:
            session = c.start_session("Buy a cable", checklist=CHECKLIST, observation=OBS)
            return best_of_n_sync(session, PROPOSALS[:3], samples=1, approval="never")

    got = await asyncio.to_thread(blocking)  # the daemon runs on this test's loop
    assert [x.action for x in got.candidates] == [
        "fill('12', 'usb-c cable')",
        "click('40')",
        "click('13')",
    ]
    assert got.counts == [1, 1, 1] and got.chosen == got.candidates[got.index]
