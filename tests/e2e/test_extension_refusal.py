"""A refused request leaves the page usable (issue 51): a person's Reject of a form's POST in
the paired extension's side panel keeps the form's page, with its typed values, instead of
Chromium's error page; the overlay says who refused it and why; the agent's next observation
is that page."""

from __future__ import annotations

from typing import Any

from tests.e2e.browser import hook_key, require_browser
from tests.e2e.test_extension_commit_hold import CHECKLIST, posts, recording_server
from tests.e2e.test_golden_capture import hook

require_browser()


async def test_a_rejected_form_post_keeps_the_page_its_values_and_the_next_observation(
    paired: Any, tmp_path: Any
) -> None:
    daemon, browser = paired
    with recording_server() as (base, seen):
        page = await browser.ctx.new_page()
        form = f"{base}/form.html"  # a form that POSTs to /orders
        await page.goto(form, wait_until="load")
        key = await hook_key(daemon)
        started = await hook(
            page, "session.start", intent="Order a lamp", checklist=CHECKLIST, key=key
        )
        assert started["type"] == "session.started", started
        sid = started["session_id"]
        await page.fill("input[name=sku]", "two desk lamps")
        await page.click("#go", no_wait_after=True)

        panel = await browser.open_panel()
        card = panel.locator("[data-testid=ws-decide][data-reason=commit]")
        await card.wait_for(timeout=30_000)
        assert await card.get_by_test_id("ws-request-url").inner_text() == f"{base}/orders"
        (tmp_path / "card-before.png").write_bytes(await card.screenshot())
        await card.get_by_role("button", name="Reject").click()

        notice = page.get_by_test_id("ws-refused")
        await notice.wait_for(timeout=30_000)
        said = await notice.inner_text()
        assert said.startswith(f"webshepherd did not send POST {base}/orders"), said
        assert "refused by a person" in said and "way out" not in said, said  # final
        # the page stays where it was, with what was typed: no error page, nothing sent
        assert page.url == form
        assert await page.input_value("input[name=sku]") == "two desk lamps"
        assert posts(seen) == []
        await page.bring_to_front()
        (tmp_path / "page-after-reject.png").write_bytes(await page.screenshot())

        # the agent's next observation is that page
        observed = await hook(page, "observe", key=key)
        assert observed["type"] == "observed", observed
        monitor = await daemon.client(role="monitor", name="tui")
        got = await monitor.request({"type": "session.get", "session_id": sid})
        last = [e for e in got["events"] if e["type"] == "observed"][-1]
        assert last["url"] == form, last["url"]
        assert "two desk lamps" in last["axtree"], last["axtree"]
