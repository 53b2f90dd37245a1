"""Size and generation time of ``webshepherd report`` for a long session with screenshots.

    .venv/bin/python bench/report.py [--steps 50] [--repeats 5] [--screenshot FILE.png]

Builds the session the way a user's is built: shop pages rendered in Chromium (1280×720
PNG screenshots), recorded step by step through a real daemon on loopback with the tiny
model scoring three candidates per step (one approval). Then renders the report
``--repeats`` times and prints the file's size (and the screenshots' share of it) and the
median generation time (reading the recording + rendering). ``--screenshot`` also renders
the report's top in Chromium to a PNG (the picture in docs/report.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fixtures.daemon import TEST_TOKEN, make_settings  # noqa: E402
from tests.fixtures.report_session import (  # noqa: E402
    CHROMIUM,
    record_report_session,
    shop_pages,
    snapshots,
)


async def build(data_base: Path, steps: int) -> tuple[str, int]:
    """Record the session; returns its id and the screenshots' total bytes."""
    from tqdm import tqdm
    from webshepherd.daemon.build import build_daemon
    from webshepherd.daemon.config import ModelSettings
    from webshepherd.daemon.dev.tiny_model import ensure_tiny_model
    from websockets.asyncio.client import connect

    from tests.fixtures.daemon import WsClient, pairing_code

    observations = await snapshots(shop_pages(steps))
    shots = sum(len(o["screenshot"]["data"]) * 3 // 4 for o in observations)
    model = ModelSettings(str(ensure_tiny_model(progress=False)), device="cpu")
    server = build_daemon(replace(make_settings(data_base), model=model))
    await server.start()
    clients = []
    try:
        for role, name in (("agent", "bench"), ("extension", "ext")):
            c = WsClient(await connect(server.url, max_size=None))
            clients.append(c)
            hello = {
                "type": "hello",
                "protocol": 1,
                "token": TEST_TOKEN,
                "client": {"name": name, "version": "1", "role": role},
            }
            assert (await c.request(hello))["type"] == "welcome"
            if role != "agent":  # the person's tool decides: paired as a person pairs it
                code = pairing_code(server.config.config_dir, role)
                paired = await c.request({"type": "pair", "code": code, "name": name})
                assert paired["type"] == "paired", paired
        bar = tqdm(total=steps, desc="recording", unit="step", file=sys.stderr)
        agent, approver = clients

        class Counting:  # counts the agent's score requests for the progress bar
            def __getattr__(self, name: str) -> object:
                return getattr(agent, name)

            async def send(self, message: dict[str, object]) -> None:
                if message.get("type") == "score":
                    bar.update(1)
                await agent.send(message)

        sid = await record_report_session(Counting(), approver, observations)
        bar.close()
    finally:
        for c in clients:
            await c.close()
        await server.stop()
    return sid, shots


async def shoot(html: Path, png: Path) -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = await browser.new_page(viewport={"width": 1180, "height": 1240})
        await page.goto(html.as_uri())
        await page.screenshot(path=str(png))
        await browser.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--screenshot", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()
    from webshepherd.daemon.cli.report import write_report

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        sid, shots = asyncio.run(build(base, args.steps))
        out = base / "report.html"
        times = []
        # the model is named by its folder on this machine: kept out of the picture
        redact = [str(Path.home())]
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            write_report(base / "data", sid, out, redact)
            times.append(time.perf_counter() - t0)
        size = out.stat().st_size
        figures = {
            "steps": args.steps,
            "report_bytes": size,
            "report_mib": round(size / 2**20, 2),
            "screenshot_bytes": shots,
            "screenshots_share": round(shots * 4 / 3 / size, 3),
            "generation_s_median": round(statistics.median(times), 3),
            "generation_s_all": [round(t, 3) for t in times],
        }
        print(json.dumps(figures, indent=2))
        print(
            f"report of {args.steps} steps: {size / 2**20:.2f} MiB "
            f"(screenshots as base64: {figures['screenshots_share']:.0%}), "
            f"generated in {figures['generation_s_median']:.3f} s (median of {args.repeats})"
        )
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2) + "\n")
        if args.screenshot:
            asyncio.run(shoot(out, args.screenshot))
            print(f"wrote {args.screenshot}")


if __name__ == "__main__":
    main()
