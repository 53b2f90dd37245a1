"""AX-tree capture time: the real extension beside BrowserGym's own extraction, on one page.

    .venv/bin/python bench/axtree_capture.py [--elements 1000 5000 20000] [--runs 10] [--json OUT]

Serves a generated page of ``--elements`` elements on loopback and opens it twice: in headless
Chromium (/usr/bin/chromium) with the built extension (``--dist``), and in a second headless
Chromium driven by BrowserGym (browsergym-core in the integrations venv,
bench/axtree_browsergym.py: mark, DOM snapshot, merged AX tree, extra properties, unmark,
flatten). The two captures alternate, ``--runs`` times each after two warm-ups, so both see the
same machine load. The extension's capture is its own code path (the service worker's
``captureUrl``, as ``webshepherd observe`` runs it: default flags, no screenshot), timed from
Python (one ``worker.evaluate`` round trip included) and by phase inside the extension.
Prints p50 / p95 / max of both, the phases, Chromium's own ``Accessibility.getFullAXTree``
alone, and whether the texts are identical; ``--json OUT`` writes it all with the load average.
Exits non-zero when the texts differ or a capture fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
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


class BrowserGymRunner:
    """bench/axtree_browsergym.py in its own venv and Chromium: one extraction per ``run()``."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, python: Path, url: str) -> BrowserGymRunner:
        script = Path(__file__).with_name("axtree_browsergym.py")
        proc = await asyncio.create_subprocess_exec(
            str(python),
            str(script),
            url,
            CHROMIUM,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=1 << 28,
        )
        runner = cls(proc)
        if (await runner._line()) != "ready":
            sys.exit("BrowserGym's side did not start")
        return runner

    async def _line(self) -> str:
        assert self.proc.stdout is not None
        line = await self.proc.stdout.readline()
        if not line:
            sys.exit(f"BrowserGym's extraction failed (exit {await self.proc.wait()})")
        return line.decode().strip()

    async def run(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"run\n")
        await self.proc.stdin.drain()
        result: dict[str, Any] = json.loads(await self._line())
        return result

    async def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await self.proc.wait()


async def measure(
    elements: int, runs: int, flags: str, bgym: Path | None, dist: Path
) -> dict[str, Any]:
    """Both captures of one generated page, served once, alternating run by run."""
    load_before = os.getloadavg()
    wall: list[float] = []
    ext_phases: dict[str, list[float]] = {}
    bg_ms: list[float] = []
    bg_phases: dict[str, list[float]] = {}
    text, bg_text, error = "", "", None
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "site"
        root.mkdir()
        (root / "big.html").write_text(page_html(elements), encoding="utf-8")
        with serve_dir(root) as base:
            url = f"{base}/big.html"
            bg = await BrowserGymRunner.start(bgym, url) if bgym is not None else None
            async with extension_context(Path(tmp) / "profile", dist, CHROMIUM) as (ctx, worker):
                await wait_extension_ready(worker)
                page = await ctx.new_page()
                await page.goto(url, wait_until="load")
                n = await page.evaluate("document.getElementsByTagName('*').length")
                for r in range(runs + 2):
                    if error is None:
                        t0 = time.perf_counter()
                        try:
                            got = await capture(worker, url, flags)
                        except Exception as exc:  # the figure to report is that it failed
                            error = str(exc).splitlines()[0]
                        else:
                            dt = (time.perf_counter() - t0) * 1000
                            text = got["axtree"]
                            if r >= 2:
                                wall.append(dt)
                                for k, v in got["timing"].items():
                                    ext_phases.setdefault(k, []).append(v)
                    if bg is not None:
                        one = await bg.run()
                        bg_text = one["text"]
                        if r >= 2:
                            bg_ms.append(one["ms"])
                            for k, v in one["phases"].items():
                                bg_phases.setdefault(k, []).append(v)
                # the floor: Chromium's own Accessibility.getFullAXTree for the page, nothing else
                raw = [await worker.evaluate(RAW_AXTREE_JS, url) for _ in range(5)]
                await page.close()
            if bg is not None:
                await bg.stop()
    report: dict[str, Any] = {
        "elements": n,
        "lines": len((text or bg_text).splitlines()),
        "chars": len(text or bg_text),
        "load_avg_1_5_15": {"before": load_before, "after": os.getloadavg()},
        "extension": {
            **(stats(wall) if wall else {"error": error}),
            "phases_p50_ms": {k: statistics.median(v) for k, v in ext_phases.items()},
            "get_full_axtree_alone_p50_ms": statistics.median(raw),
        },
    }
    if bg is not None:
        report["browsergym"] = {
            **stats(bg_ms),
            "phases_p50_ms": {k: statistics.median(v) for k, v in bg_phases.items()},
        }
        report["identical"] = bg_text == text if error is None else None
    return report


def print_report(r: dict[str, Any], flags: str, runs: int) -> None:
    print(f"page: {r['elements']} elements; AX-tree text: {r['lines']} lines, {r['chars']} chars")
    load = r["load_avg_1_5_15"]
    print(
        f"machine: {platform.machine()}, {platform.processor() or platform.system()}, "
        f"{os.cpu_count()} CPUs; flags={flags}; runs={runs} each, alternating; load average "
        f"{load['before'][0]:.2f} before, {load['after'][0]:.2f} after"
    )
    e = r["extension"]
    rows = [("extension (Python round trip)", e)]
    if "browsergym" in r:
        rows.append(("BrowserGym extraction", r["browsergym"]))
    for name, s in rows:
        if "error" in s:
            print(f"{name:30s} FAILED: {s['error']}")
            continue
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
        if "p50_ms" in e:
            print(
                f"  extension / BrowserGym p50: {e['p50_ms'] / b['p50_ms']:.2f}x; "
                f"texts identical: {r['identical']}"
            )


async def main(
    sizes: list[int], runs: int, flags: str, bgym: Path | None, out: Path | None, dist: Path
) -> None:
    if not (dist / "manifest.json").exists():
        sys.exit("build the extension first: cd extension && npm ci && npm run build")
    reports = []
    for elements in sizes:
        r = await measure(elements, runs, flags, bgym, dist)
        print_report(r, flags, runs)
        reports.append(r)
    if out is not None:
        out.write_text(json.dumps(reports[0] if len(reports) == 1 else reports, indent=2) + "\n")
    if any(r.get("identical") is False for r in reports):
        sys.exit("the extension's text differs from BrowserGym's")
    if any("error" in r["extension"] for r in reports):
        sys.exit("the extension's capture failed")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    ap.add_argument("--elements", type=int, nargs="+", default=[5000])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--flags", choices=("default", "visible"), default="default")
    ap.add_argument("--json", type=Path, help="write the figures here (a list for several sizes)")
    ap.add_argument("--dist", type=Path, default=DIST, help="the built extension to load")
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
    asyncio.run(main(a.elements, a.runs, a.flags, bgym, a.json, a.dist.resolve()))
