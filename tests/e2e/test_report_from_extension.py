"""A session the real extension observes (screenshot and element boxes) becomes a report
whose outlines sit on the candidates' targets as Chromium laid them out."""

from __future__ import annotations

import asyncio

from webshepherd.daemon.cli.report import write_report
from webshepherd.daemon.recorder import History

from tests.e2e.browser import GOLDEN, hook_key, require_browser, serve_dir
from tests.e2e.test_golden_capture import hook

require_browser()

CANDS = [
    {"thought": "Search first.", "action": "fill('14', 'lamp')"},
    {"thought": "Add the first product.", "action": "click('24')"},
]


async def test_extension_boxes_outline_targets_in_the_report(paired, tmp_path):
    daemon, browser = paired
    with serve_dir(GOLDEN) as site:
        page = await browser.ctx.new_page()
        await page.goto(f"{site}/p2-shop.html", wait_until="load")
        key = await hook_key(daemon)
        started = await hook(
            page,
            "session.start",
            intent="Buy a desk lamp",
            checklist="Checklist 1: Search",
            key=key,
        )
        sid = started["session_id"]
        scored = await hook(page, "score", candidates=CANDS, samples=1, approval="never", key=key)
        assert scored["type"] == "scored", scored
        expected = {
            bid: await page.locator(f"[bid='{bid}']").bounding_box() for bid in ("14", "24")
        }

    history = History.open(daemon.config.db_path)
    try:
        tl = history.timeline(sid)
    finally:
        history.close()
    assert tl is not None
    step = next(s for s in tl.steps if s.scoring is not None)
    assert step.screenshot and step.boxes, "the extension sent no screenshot or boxes"
    for bid, box in expected.items():
        assert box is not None
        x, y, w, h = step.boxes[bid]  # device pixel ratio 1 here: CSS pixels
        assert abs(x - box["x"]) <= 1 and abs(y - box["y"]) <= 1
        assert abs(w - box["width"]) <= 1 and abs(h - box["height"]) <= 1

    out = await asyncio.to_thread(write_report, daemon.config.data_dir, sid, tmp_path / "r.html")
    report = await browser.ctx.new_page()
    await report.goto(out.as_uri())
    rects = report.locator("section.step svg.targets rect.target")
    assert await rects.count() == 2
    xs = sorted([float(await rects.nth(i).get_attribute("x") or "nan") for i in range(2)])
    assert xs == sorted(round(b["x"], 1) for b in expected.values() if b)
