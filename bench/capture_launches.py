"""Back-to-back launches of the Playwright helper: ``launch()`` + ``page_observation()``.

    .venv/bin/python bench/capture_launches.py [--runs 100] [--json OUT]
    .venv-integrations/bin/python bench/capture_launches.py [--runs 100] [--json OUT]

Each run is what ``examples/quickstart.py`` does with Playwright's sync API: a fresh Chromium
(/usr/bin/chromium, temporary profile) with the built extension (``launch``), a new page on the
bundled shop (loopback), the extension's capture (``page_observation``), the context closed.
The worker's readiness is the fragile moment (Playwright 1.44, BrowserGym's pin, hands out the
service worker before its global scope is up), so each run starts a new browser. Prints the
Playwright version, runs, failures (with their messages), seconds in all and per run; ``--json
OUT`` writes the same with the load average. Exits non-zero when a run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.integrations.playwright import launch, page_observation

CHROMIUM = "/usr/bin/chromium"


def bench(runs: int, chromium: str) -> dict[str, Any]:
    times: list[float] = []
    failures: list[str] = []
    start = time.perf_counter()
    with ShopServer() as shop, sync_playwright() as pw:
        for i in range(runs):
            t0 = time.perf_counter()
            context = None
            try:
                context = launch(pw, chromium=chromium)
                page = context.new_page()
                page.goto(shop.url, wait_until="load")
                observation = page_observation(page)
                if "RootWebArea" not in observation.axtree:
                    raise RuntimeError(f"no AX tree in the capture: {observation.axtree[:80]!r}")
            except Exception as exc:
                failures.append(f"run {i}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
                print(failures[-1], file=sys.stderr, flush=True)
            finally:
                if context is not None:
                    context.close()
            times.append(time.perf_counter() - t0)
    return {
        "playwright": version("playwright"),
        "python": sys.executable,
        "runs": runs,
        "failures": len(failures),
        "failure_messages": failures,
        "seconds": round(time.perf_counter() - start, 1),
        "run_s_p50": round(statistics.median(times), 2),
        "run_s_max": round(max(times), 2),
        "loadavg": os.getloadavg(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--chromium", default=CHROMIUM)
    parser.add_argument("--json", type=Path, default=None, metavar="OUT")
    args = parser.parse_args()
    result = bench(args.runs, args.chromium)
    print(
        f"playwright {result['playwright']}: runs {result['runs']}, "
        f"failures {result['failures']}, seconds {result['seconds']} "
        f"(per run p50 {result['run_s_p50']} s, max {result['run_s_max']} s)"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
