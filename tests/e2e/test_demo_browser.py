"""``webshepherd demo --browser --headless --out DIR`` end to end: the tiny model, the daemon,
the shop in Chromium with the extension, an approval shown in the overlay and decided in the
extension's side panel, and what the demo wrote (summary.json, screenshots) checked against
what happened."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.e2e.browser import require_browser
from tests.fixtures.demo_cli import DEMO, demo_env, run_demo

require_browser()
pytestmark = pytest.mark.model
HEADED_ARGS = ["--samples", "1", "--max-steps", "3", "--approval-timeout", "2"]


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", path
    width, height = struct.unpack(">II", data[16:24])
    assert data.endswith(b"IEND\xaeB`\x82"), path
    return width, height


@pytest.fixture(scope="module")
def demo(tiny_model_path: Path, tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    tmp = tmp_path_factory.mktemp("demo-browser")
    out = tmp / "out"
    result = run_demo(
        [*DEMO, "--browser", "--headless", "--out", str(out), "--samples", "1", "--keep"],
        demo_env(tmp, tiny_model_path),
        timeout=280,
    )
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
    assert not (tmp / "user-data").exists() and not (tmp / "user-config").exists()
    return result, out


def test_the_order_is_placed_and_every_step_is_recorded(demo):
    result, out = demo
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["mode"] == "headless"
    kept = Path(summary["data_dir"])  # --keep: the recording stays, for report and export
    assert (kept / "webshepherd.sqlite3").is_file()
    steps, approval = summary["steps"], summary["approvals"]
    # the shop's path: home (type, search) -> results -> product -> cart -> checkout (name, order)
    paths = [urlsplit(s["url"]).path for s in steps]
    assert (
        paths
        == ["/", "/", "/search", "/product/" + paths[3].rsplit("/", 1)[-1], "/cart"]
        + ["/checkout"] * 2
    )
    assert [s["step"] for s in steps] == list(range(1, len(steps) + 1))
    daemon_steps = [s["daemon_step"] for s in steps]
    assert daemon_steps == sorted(daemon_steps) and daemon_steps[0] == 0
    for s in steps:
        assert len(s["candidates"]) == 3 and len(s["rewards"]) == 3
        good = [i for i, c in enumerate(s["candidates"]) if c["good"]]
        assert good == [s["chosen"]]
        assert s["error"] is None
        assert all(r is None or 0.0 <= r <= 1.0 for r in s["rewards"])
        if s["best"] is not None:
            scored = [r for r in s["rewards"] if r is not None]
            assert s["rewards"][s["best"]] == max(scored)
        assert s["latency_ms"] > 0 and s["model_ms"] >= 0
        assert _png_size(out / s["screenshot"]) == (1280, 720)
    held = [s for s in steps if s["step"] == approval[0]["step"]]
    assert len(approval) == 1 and held
    for s in steps:  # the script's good action ran everywhere (the held one was rejected)
        assert s["executed"] == s["candidates"][s["chosen"]]["action"]
    # the approval: a bad candidate of that step, rejected in the extension's side panel
    a = approval[0]
    bad = [c["action"] for c in held[0]["candidates"] if not c["good"]]
    assert a["action"] in bad and a["decision"] == "rejected"
    # the overlay named the step as the terminal did (protocol/steps.py, extension/src/steps.ts)
    heading = a["overlay"].casefold()  # as rendered: the overlay's CSS sets it in capitals
    assert heading.startswith(f"waiting for a person: step {a['step']} (")
    assert re.search(rf"^step {a['step']}  /search", result.stdout, re.MULTILINE)
    assert a["by"] == "extension:webshepherd-extension/panel"
    assert a["executed"] == held[0]["executed"]
    assert _png_size(out / a["screenshot"]) == (1280, 720)
    # the outcome: the confirmation page of the order
    outcome = summary["outcome"]
    assert outcome["status"] == "success" and re.fullmatch(r"VW-\d+", outcome["order"])
    assert urlsplit(outcome["url"]).path == f"/order/{outcome['order']}"
    assert outcome["heading"] == "Thank you, Ada Lovelace!"
    totals = summary["totals"]
    assert totals["steps"] == len(steps) == 7 and totals["approvals"] == 1
    assert totals["step_latency_ms"]["max"] == max(s["latency_ms"] for s in steps)
    # the terminal told the same story
    assert "clicking Reject in the extension's side panel" in result.stdout
    assert f"its checklist as the shop's in {totals['checklist_as_shop']};" in result.stdout
    assert f"order {outcome['order']} placed in 7 steps" in result.stdout
    assert re.search(r"step latency p50 \d+\.\d ms", result.stdout)


def test_headed_without_a_display_says_what_to_do(tmp_path, tiny_model_path):
    env = demo_env(tmp_path, tiny_model_path)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    result = run_demo([*DEMO, "--browser"], env, timeout=120)
    assert result.returncode == 2
    text = " ".join(result.stdout.split())
    assert "no display" in text and "--headless" in text and "xvfb-run" in text


@pytest.mark.skipif(
    shutil.which("xvfb-run") is None, reason="xvfb-run is missing (apt-get install xvfb)"
)
def test_headed_under_xvfb_waits_for_a_person(tmp_path, tiny_model_path):
    out = tmp_path / "out"
    result = run_demo(
        ["xvfb-run", "-a", *DEMO, "--browser", "--out", str(out), *HEADED_ARGS],
        demo_env(tmp_path, tiny_model_path),
        timeout=200,
    )
    # three steps do not reach the order: exit code 1, and the summary says so
    assert result.returncode == 1, result.stderr[-3000:] + result.stdout[-3000:]
    assert "Your turn:" in result.stdout and "Click Approve" in result.stdout
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["mode"] == "headed" and summary["outcome"]["status"] == "failure"
    assert [s["step"] for s in summary["steps"]] == [1, 2, 3]
    [a] = summary["approvals"]
    assert (a["step"], a["decision"], a["by"]) == (3, "timeout", None)  # nobody clicked
    step3 = summary["steps"][2]
    assert a["executed"] == step3["executed"] == step3["candidates"][step3["chosen"]]["action"]
    assert step3["approval_wait_ms"] > 0
    assert _png_size(out / a["screenshot"]) == (1280, 720)


RANK = {"no": 0, "in_progress": 1, "yes": 2}


def test_the_judge_tells_the_shops_truth_on_the_page(demo):
    """What the overlay and the side panel draw, from the judge that ships, follows the shop:
    the good action first in at least 6 of 7 steps, each executed action's checklist verdicts
    the shop's own labels for it (``shop``: its state and the page the action led to), and no
    item ever taken back from Yes."""
    _, out = demo
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    steps, totals = summary["steps"], summary["totals"]
    assert totals["agreed"] >= 6, [(s["rewards"], s["chosen"]) for s in steps]
    # the shop's trail: the search typed, then run; the cheapest opened, added; checkout
    # (its page, the name), then the order: every item done
    shop = [[RANK[s["shop"][str(i)]] for s in steps] for i in (1, 2, 3, 4)]
    assert [t[0] for t in shop] == [1, 0, 0, 0] and all(t[-1] == 2 for t in shop)
    assert all(t == sorted(t) for t in shop)
    assert [s["checklist"] for s in steps] == [s["shop"] for s in steps]
    assert totals["checklist_as_shop"] == len(steps)
    for i in ("1", "2", "3", "4"):
        seen = [s["checklist"][i] for s in steps]
        assert "yes" not in seen or all(v == "yes" for v in seen[seen.index("yes") :]), seen
