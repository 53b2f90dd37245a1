"""The SDK's agent loop (``run_episode``) over the Playwright harness: the bundled shop in
Chromium, a real daemon (tiny model), the order placed by bid actions in the real page."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from webshepherd.daemon.browser.playwright_env import PlaywrightEnvironment
from webshepherd.daemon.demo.agent import CHECKLIST, SHOPPER, TASK, ShopAgent
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.protocol.agents import EpisodeOptions, PageState, PolicyContext, run_episode
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.common import Candidate

from tests.e2e.browser import require_browser
from tests.fixtures.daemon import TEST_TOKEN

require_browser()
pytestmark = pytest.mark.model


@pytest.fixture
def shop() -> Iterator[ShopServer]:
    with ShopServer() as server:
        yield server


class GoodOnly:
    """The scripted agent's good action each step; its answer once the order is confirmed."""

    def __init__(self) -> None:
        self.agent = ShopAgent()
        self.pages: list[PageState] = []

    def propose(self, state: PageState, context: PolicyContext) -> list[Candidate]:
        self.pages.append(state)
        if self.agent.done(state.url):
            order = state.url.rsplit("/", 1)[-1]
            return [Candidate(thought="Done.", action=f"send_msg_to_user('{order}')")]
        good = self.agent.good(state.url, state.axtree)
        return [Candidate(thought=good.thought, action=good.action)]


async def test_run_episode_places_the_order_in_chromium(start_daemon, browser, shop):
    from tests.fixtures.scripted_judge import NO_GUARDS

    daemon = await start_daemon(guards=NO_GUARDS)  # the order is placed unattended
    page = await browser.ctx.new_page()
    await page.goto(shop.url, wait_until="load")
    env = PlaywrightEnvironment(page, browser.worker)
    policy = GoodOnly()
    async with AsyncClient(daemon.url, token=TEST_TOKEN) as client:
        result = await run_episode(
            client, env, policy, TASK,
            EpisodeOptions(checklist=CHECKLIST, start_url=shop.url, samples=1,
                           reward_samples=1, approval="never", max_steps=10),
        )  # fmt: skip
        recorded = await client.session(result.session_id)
    # the real shop took the order the browser placed
    [order] = shop.state.orders
    assert order["name"] == SHOPPER and order["items"] == ["Basic USB-C cable, 1 m"]
    assert (result.outcome, result.answer) == ("success", order["number"])
    ran = [s.chosen.action for s in result.steps if s.chosen is not None]
    assert ran[-1] == f"send_msg_to_user('{order['number']}')" and len(ran) == 8
    assert all(s.error is None for s in result.steps)
    # every observation was the extension's capture of the real page, with a screenshot
    assert all(p.screenshot and p.screenshot.startswith(b"\x89PNG") for p in policy.pages)
    assert "[" in policy.pages[0].axtree and "searchbox 'Search" in policy.pages[0].axtree
    assert recorded.session.outcome == "success" and recorded.session.state == "ended"
