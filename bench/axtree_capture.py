"""AX-tree capture time through the real extension on a generated 5,000-element page.

    .venv/bin/python bench/axtree_capture.py [--elements 5000] [--runs 20] [--flags default|visible]

Launches headless Chromium (/usr/bin/chromium) with the built extension (extension/dist),
serves a generated page on loopback, and captures it with the extension's own code path
(the service worker's ``captureUrl``: mark bids, DOM snapshot, per-frame
``Accessibility.getFullAXTree``, merge, flatten to BrowserGym's text), ``--runs`` times after
two warm-up captures. Prints p50 / p95 / max of the wall time seen from Python (one
``worker.evaluate`` round trip included) and of the extension's own ``totalMs``, plus the
text's size. No daemon is needed: the capture is what every ``observe`` does first.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from webshepherd.daemon.browser.chromium import capture, extension_context, wait_extension_ready

from tests.e2e.browser import CHROMIUM, DIST, serve_dir

RAW_AXTREE_JS = """async (u) => {
  const tab = (await chrome.tabs.query({})).find((t) => t.url.startsWith(u));
  const t0 = performance.now();
  await chrome.debugger.sendCommand({tabId: tab.id}, "Accessibility.getFullAXTree", {});
  return performance.now() - t0;
}"""


def page_html(elements: int) -> str:
    """A shop-like page: rows of (li, link, span, input, button) until ``elements`` elements."""
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Big page</title>",
        "</head><body><h1>Catalogue</h1><form><ul>",
    ]
    count = 8  # html, head, meta, title, body, h1, form, ul; rows make up the rest
    i = 0
    while count + 5 <= elements:
        parts.append(
            f"<li><a href='#p{i}'>Product {i}</a> <span>{i % 97}.99 EUR</span> "
            f"<input aria-label='Quantity {i}' value='1'> "
            f"<button type='button'>Add {i}</button></li>"
        )
        count += 5
        i += 1
    parts.append("</ul>" + "<i>.</i>" * (elements - count) + "</form></body></html>")
    return "".join(parts)


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    k = (len(xs) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


async def main(elements: int, runs: int, flags: str) -> None:
    if not (DIST / "manifest.json").exists():
        sys.exit("build the extension first: cd extension && npm ci && npm run build")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "site"
        root.mkdir()
        (root / "big.html").write_text(page_html(elements), encoding="utf-8")
        with serve_dir(root) as base:
            async with extension_context(Path(tmp) / "profile", DIST, CHROMIUM) as (ctx, worker):
                await wait_extension_ready(worker)
                page = await ctx.new_page()
                await page.goto(f"{base}/big.html", wait_until="load")
                n = await page.evaluate("document.getElementsByTagName('*').length")
                wall: list[float] = []
                ext: list[float] = []
                parts: dict[str, list[float]] = {"markMs": [], "snapshotMs": [], "axtreeMs": []}
                text = ""
                for r in range(runs + 2):
                    t0 = time.perf_counter()
                    got = await capture(worker, f"{base}/big.html", flags)
                    dt = (time.perf_counter() - t0) * 1000
                    if r >= 2:
                        wall.append(dt)
                        ext.append(got["timing"]["totalMs"])
                        for k, v in parts.items():
                            v.append(got["timing"][k])
                    text = got["axtree"]
                # the floor: Chromium's own Accessibility.getFullAXTree for the page, nothing else
                raw: list[float] = []
                for _ in range(5):
                    raw.append(
                        await worker.evaluate(
                            RAW_AXTREE_JS,
                            f"{base}/big.html",
                        )
                    )
    print(f"page: {n} elements; AX-tree text: {len(text.splitlines())} lines, {len(text)} chars")
    print(
        f"machine: {platform.machine()}, {platform.processor() or platform.system()}, "
        f"{os.cpu_count()} CPUs; flags={flags}; runs={runs}"
    )
    for name, xs in (("wall (Python round trip)", wall), ("extension totalMs", ext)):
        print(
            f"{name:26s} p50 {statistics.median(xs):7.1f} ms  p95 {pct(xs, 0.95):7.1f} ms  "
            f"max {max(xs):7.1f} ms"
        )
    print(f"  Accessibility.getFullAXTree alone (5 calls): p50 {statistics.median(raw):.1f} ms")
    print(
        "  extension p50 by phase: "
        + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in parts.items())
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--elements", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--flags", choices=("default", "visible"), default="default")
    a = ap.parse_args()
    asyncio.run(main(a.elements, a.runs, a.flags))
