"""The shop's own checklist progress, and the labels it gives an action."""

from __future__ import annotations

from webshepherd.daemon.demo.agent import ShopAgent
from webshepherd.daemon.demo.browser import Browser
from webshepherd.daemon.demo.progress import Progress, measure
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.variants import trap_variant, variant


def test_labels_follow_the_rule() -> None:
    before = Progress((2, 0, 0, 1))
    assert Progress((2, 1, 0, 1)).labels(before) == ("yes", "yes", "no", "no")
    assert Progress((2, 0, 0, 2)).labels(before) == ("yes", "no", "no", "in_progress")
    assert Progress((2, 0, 0, 1)).labels(before) == ("yes", "no", "no", "no")  # no move: No
    assert Progress((2, 0, 0, 0)).labels(before) == ("yes", "no", "no", "no")  # went back
    assert Progress((2, 1, 1, 3)).done() == (True, True, True, True)


def test_the_good_path_moves_each_item_no_in_progress_yes() -> None:
    shop = variant(0)
    with ShopServer(variant=shop) as server:
        browser, agent = Browser(), ShopAgent(shop=shop)
        browser.goto(server.url)
        obs = browser.observe()
        progress = measure(shop, server.state, obs.url, obs.axtree, Progress())
        seen = []
        while not agent.done(browser.url):
            obs = browser.observe()
            browser.act(agent.good(obs.url, obs.axtree).action)
            now = browser.observe()
            after = measure(shop, server.state, now.url, now.axtree, progress)
            seen.append(after.labels(progress))
            progress = after
    assert seen == [
        ("in_progress", "no", "no", "no"),  # the query typed
        ("yes", "no", "no", "no"),  # the results shown
        ("yes", "yes", "no", "no"),  # the cheapest cable's page
        ("yes", "yes", "yes", "no"),  # in the cart
        ("yes", "yes", "yes", "in_progress"),  # at checkout
        ("yes", "yes", "yes", "in_progress"),  # the name filled
        ("yes", "yes", "yes", "yes"),  # the order placed
    ]


def test_a_wrong_query_or_product_makes_no_progress() -> None:
    shop = variant(0)
    with ShopServer(variant=shop) as server:
        browser = Browser()
        browser.goto(server.url + "search?q=hdmi")
        obs = browser.observe()
        assert measure(shop, server.state, obs.url, obs.axtree, Progress()).levels == (0, 0, 0, 0)
        browser.goto(server.url + "product/c1")  # a USB-C cable, not the cheapest
        obs = browser.observe()
        assert measure(shop, server.state, obs.url, obs.axtree, Progress()).levels[1] == 0


def test_opening_a_sold_out_decoy_is_not_opening_the_target() -> None:
    shop = trap_variant()
    with ShopServer(variant=shop) as server:
        browser = Browser()
        browser.goto(server.url + "search?q=usb-c+cable")
        obs = browser.observe()
        was = measure(shop, server.state, obs.url, obs.axtree, Progress())
        browser.goto(server.url + "product/d1")
        obs = browser.observe()
        after = measure(shop, server.state, obs.url, obs.axtree, was)
        assert after.labels(was) == ("yes", "no", "no", "no")
