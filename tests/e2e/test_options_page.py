"""The options page in real Chromium with a real daemon: `ws://host:port/v1#TOKEN` pasted into
either field splits at once (the token to the Token field, never left in the URL field), is
saved without the token and connects; what cannot be read is refused in words and not saved;
the pairing-code field refuses it too."""

from __future__ import annotations

from webshepherd.daemon.extension_id import EXTENSION_ID

from tests.e2e.browser import require_browser
from tests.e2e.conftest import wait_connected
from tests.fixtures.daemon import TEST_TOKEN

require_browser()


async def stored(browser, key: str):
    return await browser.worker.evaluate(f"() => chrome.storage.local.get('{key}')")


async def test_url_with_token_pasted_into_either_field_connects(start_daemon, browser):
    daemon = await start_daemon(allowed_extension_ids=(EXTENSION_ID,))
    assert daemon.url.startswith("ws://127.0.0.1:") and "#" not in daemon.url
    ext_id = browser.worker.url.split("/")[2]
    page = await browser.ctx.new_page()
    await page.goto(f"chrome-extension://{ext_id}/options.html", wait_until="load")
    connection = page.get_by_test_id("ws-connection")
    await connection.get_by_text("No token:").wait_for(timeout=30_000)
    url_field, token_field = page.get_by_label("Daemon URL"), page.get_by_label("Token")

    # into the URL field (the first one): split as it is pasted, the token out of sight
    await url_field.fill(f"{daemon.url}#{TEST_TOKEN}")
    assert await url_field.input_value() == daemon.url
    assert await token_field.input_value() == TEST_TOKEN
    assert await token_field.get_attribute("type") == "password"
    await page.get_by_role("button", name="Save").click()
    await wait_connected(browser)
    await connection.get_by_text(f"Connected to the daemon at {daemon.url}.").wait_for(
        timeout=10_000
    )
    assert await stored(browser, "url") == {"url": daemon.url}
    assert await stored(browser, "token") == {"token": TEST_TOKEN}

    # typed rather than pasted: after the first character past '#', the rest goes on in the
    # Token field
    await url_field.fill("")
    await token_field.fill("")
    await url_field.click()
    await page.keyboard.type(f"{daemon.url}#{TEST_TOKEN}")
    assert await url_field.input_value() == daemon.url
    assert await token_field.input_value() == TEST_TOKEN

    # a wrong URL is refused in words, nothing saved, the token nowhere in sight
    await url_field.fill(f"http://127.0.0.1:1/v1#{TEST_TOKEN}")
    assert TEST_TOKEN not in await url_field.input_value()
    await page.get_by_role("button", name="Save").click()
    saved = page.get_by_test_id("ws-saved")
    await saved.get_by_text("Not saved: the daemon URL starts with ws:// or wss://").wait_for()
    assert TEST_TOKEN not in await saved.inner_text()
    assert await stored(browser, "url") == {"url": daemon.url}
    assert await browser.conn_state() == "connected"

    # into the Token field: the same, after a reload shows what was saved
    await page.reload(wait_until="load")
    assert await url_field.input_value() == daemon.url
    await url_field.fill("ws://127.0.0.1:1/v1")
    await token_field.fill(f"{daemon.url}#{TEST_TOKEN}")
    assert await url_field.input_value() == daemon.url
    assert await token_field.input_value() == TEST_TOKEN
    await page.get_by_role("button", name="Save").click()
    await page.get_by_test_id("ws-saved").get_by_text("Saved;").wait_for()
    assert await stored(browser, "url") == {"url": daemon.url}

    # the pairing-code field is no place for it: cleared and said so, nothing sent
    code = page.get_by_label("Pairing code")
    await code.fill(f"{daemon.url}#{TEST_TOKEN}")
    assert await code.input_value() == ""
    await page.get_by_test_id("ws-pairing").get_by_text("Not a pairing code:").wait_for()
    assert await stored(browser, "approver") == {}
    await page.close()
