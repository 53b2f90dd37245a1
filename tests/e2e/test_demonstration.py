"""A person demonstrates a task: started from the popup, their real clicks, typing, select,
scroll and navigation reach the daemon as BrowserGym action strings (source human), the
password never does, and Stop ends the session with the outcome they pick."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.browser import require_browser, serve_dir
from tests.fixtures.poll import until

require_browser()

PAGES = Path(__file__).resolve().parent / "demo_pages"
SECRET = "hunter2-s3cret"


@pytest.fixture(scope="module")
def site():
    with serve_dir(PAGES) as base:
        yield base


async def tab_id(worker, url_prefix: str) -> int:
    return await worker.evaluate(
        "async (u) => (await chrome.tabs.query({})).find((t) => t.url.startsWith(u)).id",
        url_prefix,
    )


async def human_actions(monitor, sid: str, count: int, timeout: float = 30.0) -> list[dict]:
    async def recorded() -> list[dict]:
        got = await monitor.request({"type": "session.get", "session_id": sid})
        actions = [e for e in got["events"] if e["type"] == "action"]
        return actions if len(actions) >= count else []

    return await until(recorded, timeout, f"{count} recorded actions", interval=0.2)


async def test_demonstration_from_the_popup(paired, site):
    daemon, browser = paired
    page = await browser.ctx.new_page()
    await page.goto(f"{site}/login.html", wait_until="load")
    tab = await tab_id(browser.worker, f"{site}/login.html")
    ext_id = browser.worker.url.split("/")[2]

    popup = await browser.ctx.new_page()
    await popup.goto(f"chrome-extension://{ext_id}/popup.html?tab={tab}")
    await popup.get_by_label("Demonstrate a task: the instruction").fill("Sign in as alice")
    await popup.get_by_role("button", name="Start demonstration").click()
    await popup.get_by_role("button", name="Stop and save").wait_for()
    assert "Recording: Sign in as alice" in await popup.locator("#recording").inner_text()
    monitor = await daemon.client(role="monitor")
    state = f"chrome.runtime.sendMessage({{kind: 'demonstration.state', tabId: {tab}}})"
    sid = (await popup.evaluate(state))["session"]["sessionId"]

    bids = {
        k: await page.get_attribute(f"#{k}", "bid")
        for k in ("user", "pass", "colour", "go", "remember")
    }
    bids["label"] = await page.evaluate(
        "document.querySelector('#remember').closest('label').getAttribute('bid')"
    )
    assert all(bids.values()), bids

    done = 0

    async def settle() -> None:
        """A person's pace: what they did has been recorded, and the page they now see observed."""
        nonlocal done
        done += 1
        await human_actions(monitor, sid, done)
        await browser.worker.evaluate("(t) => self.webshepherd.demonstrationIdle(t)", tab)

    await page.bring_to_front()
    await page.click("#user")
    await page.keyboard.type("alice")
    await page.click("#pass")
    await settle()
    await page.keyboard.type(SECRET)
    await page.keyboard.press("Tab")  # to the select: the password field's change fires
    await settle()
    await page.select_option("#colour", "b")
    await settle()
    box = await page.locator("#remember").bounding_box()  # a real click on the label's text
    await page.mouse.click(box["x"] + box["width"] + 40, box["y"] + box["height"] / 2)
    assert await page.is_checked("#remember")
    await settle()
    await page.click("#go")
    await page.wait_for_url("**/welcome.html")
    await page.wait_for_load_state("load")
    await settle()
    await page.mouse.move(200, 200)
    await page.mouse.wheel(0, 300)
    await page.wait_for_function("window.scrollY >= 300")
    await settle()  # the scroll is recorded once it settles
    await page.go_back(wait_until="load")
    await settle()
    await page.goto(f"{site}/about.html", wait_until="load")
    await settle()

    await human_actions(monitor, sid, 8)  # all recorded before Stop

    await popup.bring_to_front()
    await popup.reload()
    await popup.get_by_label("Outcome").select_option("success")
    await popup.get_by_role("button", name="Stop and save").click()
    await popup.get_by_role("button", name="Start demonstration").wait_for()

    got = await monitor.request({"type": "session.get", "session_id": sid})
    actions = [e for e in got["events"] if e["type"] == "action"]  # and no other
    strings = [a["action"] for a in actions]
    assert strings == [
        f"fill('{bids['user']}', 'alice')",
        f"fill('{bids['pass']}', '[password]')",
        f"select_option('{bids['colour']}', 'Blue')",
        f"click('{bids['label']}')",  # the label's click, not the one it forwards to the box
        f"click('{bids['go']}')",
        "scroll(0, 300)",
        "go_back()",
        f"goto('{site}/about.html')",
    ], strings
    assert {a.get("source") for a in actions} == {"human"}
    assert got["events"][0]["type"] == "session.started"
    assert got["events"][0].get("source") == "human"
    assert (
        got["events"][-1]["type"] == "session.ended" and got["events"][-1]["outcome"] == "success"
    )
    # each action follows the observation of the page it was taken on
    pages = []
    for e in got["events"]:
        if e["type"] == "observed":
            assert e["url"] in e["axtree"].split("\n", 1)[0], e["url"]  # URL and tree of one page
            last_url = e["url"].rsplit("/", 1)[1]
        elif e["type"] == "action":
            pages.append((e["action"].split("(")[0], last_url))
    assert pages == [
        ("fill", "login.html"),
        ("fill", "login.html"),
        ("select_option", "login.html"),
        ("click", "login.html"),
        ("click", "login.html"),
        ("scroll", "welcome.html"),
        ("go_back", "welcome.html"),
        ("goto", "login.html"),
    ], pages
    assert SECRET not in json.dumps(got)
