"""The scripted agent and the text browser against the bundled shop, without a model."""

from __future__ import annotations

import pytest
from webshepherd.daemon.demo.agent import ShopAgent, elements
from webshepherd.daemon.demo.browser import Browser
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.protocol.agents.environment import ActionError


def test_good_actions_alone_buy_the_cheapest_cable() -> None:
    with ShopServer() as shop:
        browser, agent = Browser(), ShopAgent(seed=1)
        browser.goto(shop.url)
        steps: list[str] = []
        while not agent.done(browser.url) and len(steps) < 20:
            obs = browser.observe()
            assert agent.knows(obs.axtree)  # every page of the shop: its own
            proposals = agent.propose(obs.url, obs.axtree)
            assert len(proposals) == 3 and sum(p.good for p in proposals) == 1
            assert len({p.action for p in proposals}) == 3
            good = next(p for p in proposals if p.good)
            browser.act(good.action)
            steps.append(good.action)
        assert agent.done(browser.url), steps
        assert len(steps) == 7  # fill, search, open product, add, checkout, name, place order
        order = shop.state.orders[0]
        assert order["items"] == ["Basic USB-C cable, 1 m"] and order["total"] == 4.99
        assert order["name"] == "Ada Lovelace" and shop.state.cart == []

    other = "RootWebArea 'Example'\n\t[3] searchbox ''\n\t[4] link 'More information'"
    assert not agent.knows(other)  # another site's page, a search box and all


def test_the_agent_recovers_from_a_bad_action() -> None:
    with ShopServer() as shop:
        browser, agent = Browser(), ShopAgent()
        browser.goto(shop.url + "search?q=usb-c+cable")
        obs = browser.observe()
        good = next(p for p in agent.propose(obs.url, obs.axtree) if p.good)
        assert "Basic USB-C cable" in good.thought
        expensive = next(e for e in elements(obs.axtree) if e.name.startswith("FlexLink"))
        browser.act(f"click('{expensive.bid}')")  # the wrong product
        obs = browser.observe()
        fix = next(p for p in agent.propose(obs.url, obs.axtree) if p.good)
        browser.act(fix.action)
        assert "/search" in browser.url


def test_browser_actions_and_errors() -> None:
    with ShopServer() as shop:
        b = Browser()
        b.goto(shop.url)
        before = b.observe().axtree
        b.act("scroll(0, 400)")
        assert b.observe().axtree == before
        with pytest.raises(ActionError, match="no element"):
            b.act("click('9999')")
        with pytest.raises(ActionError, match="not a function call"):
            b.act("click(")
        with pytest.raises(ActionError, match="the text browser has no dblclick"):
            b.act("dblclick('1')")
        assert b.observe().axtree == before
        link = next(e for e in elements(before) if e.name == "About us")
        b.act(f"click('{link.bid}')")
        assert b.url.endswith("/about")
        b.act("go_back()")
        assert b.url == shop.url
