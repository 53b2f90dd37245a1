"""What a paused request's card costs the daemon: the crop of the step's screenshot.

    .venv/bin/python bench/card_crop.py [--repeats 30] [--json OUT]

``daemon/sessions/cards.py``'s ``commit_card`` decodes the step's screenshot, cuts out the
target with a margin (scaled down to fit 480x320) and encodes it as PNG, on the daemon's event
loop. Times, at 1280x720: decoding the screenshot alone, the whole card with a button's box,
and with a box as big as the page (the resize's worst case), for a screenshot-like page
(``daemon/dev/screenshots.py``) and for noise (PNG's worst case); and the bytes the card
carries against the whole screenshot's. Medians and p90s in milliseconds; no figure is
asserted.
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PIL import Image  # noqa: E402
from webshepherd.daemon.dev.screenshots import page_png  # noqa: E402
from webshepherd.daemon.sessions.cards import CausingStep, commit_card  # noqa: E402
from webshepherd.protocol.common import HeldRequest  # noqa: E402

AXTREE = "[1] RootWebArea 'Shop'\n\t[18] button 'Add to cart'\n\tStaticText 'Total: $9.98'"
REQUEST = HeldRequest(method="POST", url="http://shop.test/cart/add", kind="write")
BOXES = {"button": [300.0, 400.0, 120.0, 40.0], "page": [0.0, 0.0, 1280.0, 720.0]}


def screenshots() -> dict[str, bytes]:
    lines = [f"Product {i}: a desk lamp, warm light, $2{i}.99" for i in range(30)]
    noise = io.BytesIO()
    Image.effect_noise((1280, 720), 64).convert("RGB").save(noise, format="PNG")
    return {"page": page_png(["Shop", *lines], 1280, 720), "noise": noise.getvalue()}


def timed(fn: Callable[[], object], repeats: int) -> dict[str, float]:
    fn()  # warm
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {"median_ms": statistics.median(times), "p90_ms": times[int(0.9 * (len(times) - 1))]}


def decode(data: bytes) -> None:
    with Image.open(io.BytesIO(data)) as img:
        img.load()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    out: dict[str, object] = {"machine": platform.processor() or platform.machine()}
    for kind, data in screenshots().items():
        row: dict[str, object] = {"screenshot_kib": round(len(data) / 1024, 1)}
        row["decode"] = timed(partial(decode, data), args.repeats)
        for name, box in BOXES.items():
            step = CausingStep(0, "18", AXTREE, {"18": box}, data, "image/png", None)
            card = commit_card(REQUEST, "h", step=step)
            shot = card.screenshot.data if card.screenshot else ""
            row[f"card_{name}_box"] = {
                **timed(partial(commit_card, REQUEST, "h", step=step), args.repeats),
                "crop_kib": round(len(shot or "") * 3 / 4 / 1024, 1),
            }
        out[kind] = row
        print(f"{kind} 1280x720 ({row['screenshot_kib']} KiB):")
        for key, value in row.items():
            if isinstance(value, dict):
                extra = f", crop {value['crop_kib']} KiB" if "crop_kib" in value else ""
                ms = f"median {value['median_ms']:.1f} ms, p90 {value['p90_ms']:.1f} ms"
                print(f"  {key:<16} {ms}{extra}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
