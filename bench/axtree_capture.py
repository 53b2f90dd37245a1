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
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from webshepherd.daemon.browser.chromium import capture, extension_context, wait_extension_ready

from tests.e2e.browser import CHROMIUM, DIST, serve_dir

ROOT = Path(__file__).resolve().parents[1]
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


def stats(xs: list[float]) -> dict[str, float]:
    return {
        "p50_ms": statistics.median(xs),
        "p95_ms": pct(xs, 0.95),
        "max_ms": max(xs),
        "min_ms": min(xs),
        "runs": len(xs),
    }


def browsergym_capture(python: Path, url: str, runs: int) -> dict[str, Any]:
    """BrowserGym's extraction of ``url`` in its own venv (bench/axtree_browsergym.py)."""
    script = Path(__file__).with_name("axtree_browsergym.py")
    done = subprocess.run(
        [str(python), str(script), url, str(runs), CHROMIUM],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"BrowserGym's extraction failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


async def measure(elements: int, runs: int, flags: str, bgym: Path | None) -> dict[str, Any]:
    """Both captures of one generated page, served once, in this run."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "site"
        root.mkdir()
        (root / "big.html").write_text(page_html(elements), encoding="utf-8")
        with serve_dir(root) as base:
            url = f"{base}/big.html"
            async with extension_context(Path(tmp) / "profile", DIST, CHROMIUM) as (ctx, worker):
                await wait_extension_ready(worker)
                page = await ctx.new_page()
                await page.goto(url, wait_until="load")
                n = await page.evaluate("document.getElementsByTagName('*').length")
                wall: list[float] = []
                ext: list[float] = []
                parts: dict[str, list[float]] = {"markMs": [], "snapshotMs": [], "axtreeMs": []}
                text = ""
                for r in range(runs + 2):
                    t0 = time.perf_counter()
                    got = await capture(worker, url, flags)
                    dt = (time.perf_counter() - t0) * 1000
                    if r >= 2:
                        wall.append(dt)
                        ext.append(got["timing"]["totalMs"])
                        for k, v in parts.items():
                            v.append(got["timing"][k])
                    text = got["axtree"]
                # the floor: Chromium's own Accessibility.getFullAXTree for the page, nothing else
                raw = [await worker.evaluate(RAW_AXTREE_JS, url) for _ in range(5)]
                await page.close()
            bg = browsergym_capture(bgym, url, runs) if bgym is not None else None
    report: dict[str, Any] = {
        "elements": n,
        "lines": len(text.splitlines()),
        "chars": len(text),
        "extension": {
            **stats(wall),
            "extension_total": stats(ext),
            "phases_p50_ms": {k: statistics.median(v) for k, v in parts.items()},
            "get_full_axtree_alone_p50_ms": statistics.median(raw),
        },
    }
    if bg is not None:
        report["browsergym"] = {
            **stats(bg["ms"]),
            "phases_p50_ms": {k: statistics.median(v) for k, v in bg["phases"].items()},
        }
        report["identical"] = bg["text"] == text
    return report


def print_report(r: dict[str, Any], flags: str, runs: int) -> None:
    print(f"page: {r['elements']} elements; AX-tree text: {r['lines']} lines, {r['chars']} chars")
    print(
        f"machine: {platform.machine()}, {platform.processor() or platform.system()}, "
        f"{os.cpu_count()} CPUs; flags={flags}; runs={runs}"
    )
    e = r["extension"]
    rows = [("extension (Python round trip)", e), ("extension totalMs", e["extension_total"])]
    if "browsergym" in r:
        rows.append(("BrowserGym extraction", r["browsergym"]))
    for name, s in rows:
        print(
            f"{name:30s} p50 {s['p50_ms']:8.1f} ms  p95 {s['p95_ms']:8.1f} ms  "
            f"max {s['max_ms']:8.1f} ms"
        )
    print(
        "  Accessibility.getFullAXTree alone (5 calls): "
        f"p50 {e['get_full_axtree_alone_p50_ms']:.1f} ms"
    )
    print(
        "  extension p50 by phase: "
        + ", ".join(f"{k} {v:.1f}" for k, v in e["phases_p50_ms"].items())
    )
    if "browsergym" in r:
        b = r["browsergym"]
        print(
            "  BrowserGym p50 by phase: "
            + ", ".join(f"{k} {v:.1f}" for k, v in b["phases_p50_ms"].items())
        )
        print(
            f"  extension / BrowserGym p50: {e['p50_ms'] / b['p50_ms']:.2f}x; "
            f"texts identical: {r['identical']}"
        )


async def main(
    sizes: list[int], runs: int, flags: str, bgym: Path | None, out: Path | None
) -> None:
    if not (DIST / "manifest.json").exists():
        sys.exit("build the extension first: cd extension && npm ci && npm run build")
    reports = []
    for elements in sizes:
        r = await measure(elements, runs, flags, bgym)
        print_report(r, flags, runs)
        reports.append(r)
    if out is not None:
        out.write_text(json.dumps(reports[0] if len(reports) == 1 else reports, indent=2) + "\n")
    if any(r.get("identical") is False for r in reports):
        sys.exit("the extension's text differs from BrowserGym's")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--elements", type=int, nargs="+", default=[5000])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--flags", choices=("default", "visible"), default="default")
    ap.add_argument("--json", type=Path, help="write the figures here (a list for several sizes)")
    ap.add_argument(
        "--browsergym-python",
        type=Path,
        default=ROOT / ".venv-integrations" / "bin" / "python",
        help="a Python with browsergym-core (make .venv-integrations/.webshepherd-installed)",
    )
    ap.add_argument("--skip-browsergym", action="store_true")
    a = ap.parse_args()
    bgym = None if a.skip_browsergym else a.browsergym_python
    if bgym is not None and not bgym.exists():
        sys.exit(
            f"no {bgym}: run make .venv-integrations/.webshepherd-installed (or --skip-browsergym)"
        )
    if bgym is not None and a.flags != "default":
        sys.exit("BrowserGym's side is measured with the default flags only")
    asyncio.run(main(a.elements, a.runs, a.flags, bgym, a.json))
