"""The text browser as an agent Environment, and the scripted shop agent as a policy."""

from __future__ import annotations

import pytest
from webshepherd.daemon.demo.agent import PLAN, ShopPolicy
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.text_env import TextEnvironment
from webshepherd.daemon.sessions.signals import follows
from webshepherd.protocol.agents import ActionError, Environment, PolicyContext, RefineRequest
from webshepherd.protocol.agents.best_of_n import action_key
from webshepherd.protocol.common import Candidate
from webshepherd.protocol.errors import ErrorCode


async def test_actions_run_and_errors_are_clear_and_reported_once() -> None:
    with ShopServer() as shop:
        env = TextEnvironment(shop.url)
        assert isinstance(env, Environment)
        state = await env.observe()
        assert state.url == shop.url and "searchbox 'Search products'" in state.axtree
        assert state.last_action_error is None
        with pytest.raises(ActionError, match=r"could not run \"click\('999'\)\": no element") as e:
            await env.execute("click('999')")
        assert e.value.code is ErrorCode.INVALID_MESSAGE
        assert "no element with bid '999'" in ((await env.observe()).last_action_error or "")
        with pytest.raises(ActionError, match="the text browser has no select_option"):
            await env.execute("select_option('14', 'blue')")
        with pytest.raises(ActionError, match="not a function call"):
            await env.execute("please click search")
        result = await env.execute("fill('14', 'usb-c cable')")
        assert not result.done and (await env.observe()).last_action_error is None
        await env.execute("click('15')")
        assert (await env.observe()).url.endswith("/search?q=usb-c+cable")
        done = await env.execute("send_msg_to_user('The cheapest is $4.99.')")
        assert done.done and done.message == "The cheapest is $4.99." and done.infeasible is None
        stop = await env.execute("report_infeasible('No such shop.')")
        assert stop.done and stop.infeasible == "No such shop." and stop.message is None


async def test_the_shop_policy_samples_with_counts_follows_its_plan_and_refines() -> None:
    with ShopServer() as shop:
        env, policy = TextEnvironment(shop.url), ShopPolicy(seed=3)
        state = await env.observe()
        assert policy.plan("the task", state) == list(PLAN)
        context = PolicyContext("the task", samples=20)
        plan_step = 0
        for _ in range(12):
            state = await env.observe()
            proposals = policy.propose(state, context)
            keys = [action_key(p.action) for p in proposals]
            good = policy.agent.good(state.url, state.axtree)
            assert keys.count(action_key(good.action)) == 2  # sampled twice, two spellings
            # The good action carries out the plan's next step (the daemon's lexical test).
            assert follows(PLAN[plan_step], good.action, good.thought), (PLAN[plan_step], good)
            plan_step += 1
            refined = policy.refine(
                RefineRequest("the task", state, (), Candidate(action="scroll(0, 400)"), "fb")
            )
            assert refined.action == good.action
            result = await env.execute(good.action)
            if result.done:
                break
        assert plan_step == len(PLAN) and result.message == "Order VW-1001 is placed."
        rejected = PolicyContext("the task", rejected=(good.action,))
        again = [action_key(c.action) for c in policy.propose(state, rejected)]
        assert again and action_key(good.action) not in again
