"""Shop variants: variant 0 is the bundled shop; others keep its structure with other names."""

from __future__ import annotations

from webshepherd.daemon.demo.agent import CHECKLIST, TASK, ShopAgent
from webshepherd.daemon.demo.browser import Browser
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.variants import load_products, training_variant, trap_variant, variant


def test_variant_zero_is_the_bundled_shop() -> None:
    shop = variant(0)
    assert shop.intent == TASK
    assert shop.checklist == CHECKLIST
    assert list(shop.products) == load_products()
    assert shop.target()["name"] == "Basic USB-C cable, 1 m"


def test_variants_are_seeded_and_differ() -> None:
    assert variant(3) == variant(3)
    drawn = {variant(n).intent + repr(variant(n).products) for n in range(1, 6)}
    assert len(drawn) == 5
    trained = {repr(training_variant(i).products) for i in range(50)}
    assert not trained & {repr(variant(n).products) for n in range(1, 20)}


def test_the_cheapest_of_the_kind_is_the_target_not_a_cheaper_lookalike() -> None:
    for n in range(1, 30):
        shop = variant(n)
        target = shop.target()
        assert shop.matches(target["name"])
        kind = [p["price"] for p in shop.products if shop.matches(p["name"])]
        assert target["price"] == min(kind)


def test_the_scripted_agent_orders_the_target_in_every_variant() -> None:
    with ShopServer() as server:
        for n in (0, 1, 2, 7):
            shop = variant(n)
            server.use(shop)
            browser, agent = Browser(), ShopAgent(seed=n, shop=shop)
            browser.goto(server.url)
            for _ in range(10):
                obs = browser.observe()
                if agent.done(obs.url):
                    break
                browser.act(agent.good(obs.url, obs.axtree).action)
            assert agent.done(browser.url), (n, browser.url)
            order = server.state.orders[-1]
            assert order["items"] == [shop.target()["name"]]
            assert order["name"] == shop.shopper
            assert shop.shop in browser.observe().axtree


def test_a_sold_out_decoy_is_listed_but_never_the_target() -> None:
    shop = trap_variant()
    decoy = next(p for p in shop.products if p.get("sold_out"))
    assert shop.matches(decoy["name"]) and decoy["price"] < shop.target()["price"]
    assert shop.target() == variant(0).target()
    assert shop.products[: len(variant(0).products)] == variant(0).products
    decoyed = [training_variant(i) for i in range(40)]
    with_decoy = [s for s in decoyed if any(p.get("sold_out") for p in s.products)]
    assert 8 <= len(with_decoy) <= 24  # about DECOY_SHARE of the training shops
    for s in with_decoy:
        assert not s.target().get("sold_out") and s.matches(s.target()["name"])
    with ShopServer(variant=shop) as server:
        browser = Browser()
        browser.goto(server.url + "search?q=usb-c+cable")
        assert decoy["name"] in browser.observe().axtree  # listed like any other
        browser.goto(server.url + f"product/{decoy['id']}")
        page = browser.observe().axtree
        assert "Sold out: this item cannot be ordered." in page and "Add to cart" not in page
        server.state.cart.clear()


def test_the_agent_goes_back_from_a_sold_out_page_unless_told_not_to() -> None:
    shop = trap_variant()
    with ShopServer(variant=shop) as server:
        for backtrack, expected in ((True, "click("), (False, "scroll(")):
            server.use(shop)
            browser, agent = Browser(), ShopAgent(shop=shop, backtrack=backtrack)
            browser.goto(server.url)
            for _ in range(3):  # fill, search, the cheapest listed: the decoy
                obs = browser.observe()
                browser.act(agent.good(obs.url, obs.axtree).action)
            obs = browser.observe()
            assert "/product/d1" in obs.url
            good = agent.good(obs.url, obs.axtree)
            assert good.action.startswith(expected) and "sold out" in good.thought
        # with backtracking, the agent returns and orders the cheapest it can
        server.use(shop)
        browser, agent = Browser(), ShopAgent(shop=shop)
        browser.goto(server.url)
        for _ in range(14):
            obs = browser.observe()
            if agent.done(obs.url):
                break
            browser.act(agent.good(obs.url, obs.axtree).action)
        assert server.state.orders[-1]["items"] == [shop.target()["name"]]
