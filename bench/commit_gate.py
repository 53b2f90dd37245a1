"""What the browser's commit gate adds to page loads and to a held navigation.

    .venv/bin/python bench/commit_gate.py [--repeats 30] [--json OUT]
    .venv-integrations/bin/python bench/commit_gate.py        # playwright 1.44, BrowserGym's pin

The gate (``webshepherd.integrations.commit_gate``) routes every request of the context
through Playwright's route (each target, from its first request) and its own page session's
Fetch (redirect hops), so an unheld page load pays those round trips; a held navigation pays
a decide as well. Times ``page.goto`` (until ``load``) with Playwright's sync API in Debian's
Chromium, alternating case by case, on the write pages' servers
(tests/fixtures/write_pages): a same-origin page without and with the gate, and a page on
another origin without the gate and held by it, approved at once by a local decide (no
daemon: the gate's own cost; the held request's added latency is the last case less the
third). ``bench/miniwob_holds.py --only latency`` times
a fetch POST held and asked of a watch-mode daemon. Prints medians and p90s; no figure is
asserted.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402
from webshepherd.integrations.commit_gate import CommitGate  # noqa: E402
from webshepherd.protocol.commits import request_digest  # noqa: E402
from webshepherd.protocol.common import DecisionInfo, HeldRequest  # noqa: E402
from webshepherd.protocol.replies import CommitDecided  # noqa: E402

from tests.fixtures.write_pages import GET_SEARCH, WriteServers  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CASES = (
    "same origin, no gate",
    "same origin, through the gate",
    "other origin, no gate",
    "other origin, held, approved at once",
)

GATED = (CASES[1], CASES[3])


def approve(request: HeldRequest) -> CommitDecided:
    info = DecisionInfo(status="approved", by="bench", decider="mode", mode="watch")
    return CommitDecided(
        session_id="bench", request=request, request_digest=request_digest(request), decision=info
    )


def bench(repeats: int) -> dict[str, Any]:
    samples: dict[str, list[float]] = {case: [] for case in CASES}
    held = 0
    with sync_playwright() as pw, WriteServers() as servers:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            pages = {}
            gates = []
            for case in CASES:
                ctx = browser.new_context()
                page = ctx.new_page()
                if case in GATED:
                    gate = CommitGate(approve)
                    gate.attach(ctx, start_url=servers.home)
                    gates.append(gate)
                pages[case] = page
            same = servers.url(GET_SEARCH)
            other = f"{servers.other}/landed?via=bench"
            for i in range(repeats + 1):
                for case, page in pages.items():
                    if case.startswith("other"):
                        page.goto(same)  # start on the session's origin, then leave it
                    url = other if case.startswith("other") else same
                    t0 = time.perf_counter()
                    page.goto(url, wait_until="load")
                    ms = (time.perf_counter() - t0) * 1000
                    if i:  # the first of each is a warm-up
                        samples[case].append(ms)
                held += sum(len(g.take_decisions()) for g in gates)
            for gate in gates:
                gate.detach()
        finally:
            browser.close()
    if held != repeats + 1:
        raise SystemExit(f"the gate held {held} navigations, expected {repeats + 1}")
    med = {k: statistics.median(v) for k, v in samples.items()}
    p90 = {k: statistics.quantiles(v, n=10)[-1] for k, v in samples.items()}
    return {
        "playwright": version("playwright"),
        "repeats": repeats,
        "median_ms": med,
        "p90_ms": p90,
        "added_median_ms": {
            "page load through the gate": med[CASES[1]] - med[CASES[0]],
            "held navigation, approved at once": med[CASES[3]] - med[CASES[2]],
        },
        "held": held,
        "load": os.getloadavg(),
        "machine": platform.platform(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--repeats", type=int, default=30, help="timed loads per case")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    if args.repeats < 2:
        parser.error("--repeats: at least 2")
    result = bench(args.repeats)
    print(f"playwright {result['playwright']}, {result['repeats']} loads per case")
    for case in CASES:
        med, p90 = result["median_ms"][case], result["p90_ms"][case]
        print(f"  {case:<40} median {med:7.1f} ms  p90 {p90:7.1f} ms")
    for what, ms in result["added_median_ms"].items():
        print(f"  added, {what}: {ms:+.1f} ms (median)")
    print(f"  load average {result['load'][0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
