"""``webshepherd demo --browser --headless --out DIR`` end to end: the tiny model, the daemon,
the shop in Chromium with the extension, an approval shown in the overlay and decided in the
extension's side panel, and what the demo wrote (summary.json, screenshots) checked against
what happened."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
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


@pytest.fixture(scope="module")
def xvfb_display() -> Iterator[str]:
    """A virtual display of its own (``Xvfb -displayfd``): the headed demo draws there."""
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is missing (apt-get install xvfb)")
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "1280x800x24"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert xvfb.stdout is not None
        yield ":" + xvfb.stdout.readline().strip()
    finally:
        xvfb.terminate()
        xvfb.wait(10)


async def _decide_as_person(url: str, token: str, config_dir: Path, decided: list) -> None:
    """A person's tool paired with this daemon (a code as ``webshepherd pair tui`` makes it):
    rejects the tempting wrong candidate the demo holds, approves each request that commits."""
    from websockets.asyncio.client import connect

    from tests.fixtures.daemon import WsClient, pairing_code

    def hello(credential: str | None = None) -> dict[str, Any]:
        client = {"name": "test-person", "version": "1", "role": "monitor"}
        msg = {"type": "hello", "protocol": 1, "token": token, "client": client}
        return msg if credential is None else {**msg, "approver": credential}

    c = WsClient(await connect(url))
    assert (await c.request(hello()))["type"] == "welcome"
    code = pairing_code(config_dir, "monitor")
    paired = await c.request({"type": "pair", "code": code, "name": "test-person"})
    await c.close()
    c = WsClient(await connect(url))
    assert (await c.request(hello(paired["credential"])))["approver"] is True
    try:
        while True:
            req = await c.wait_for("approval.request", timeout=600)
            decision = "approve" if req["reason"] == "commit" else "reject"
            decided.append((req["reason"], decision, (req.get("card") or {}).get("request")))
            await c.send(
                {"type": "approval.decide", "id": f"d{len(decided)}", "decision": decision}
                | {"request_id": req["request_id"]}
            )
    finally:
        await c.close()


@pytest.mark.timeout(600)  # a whole headed run on the tiny model (the module's headless one: 280 s)
def test_guards_wait_for_the_paired_person_and_the_order_goes_through(
    xvfb_display, tiny_model_path, tmp_path, monkeypatch, capsys
):
    """Issue 51.6: ``demo --browser --guards`` headed says what it will do, then each request
    that commits waits unsent until the paired person decides (here the test, paired as a
    person's tool); approved, the order is placed and the demo ends cleanly."""
    from rich.console import Console
    from webshepherd.daemon.demo import run_browser
    from webshepherd.daemon.demo.browser_steps import BrowserDemoOptions

    monkeypatch.setenv("DISPLAY", xvfb_display)
    monkeypatch.setenv("WEBSHEPHERD_CONFIG_DIR", str(tmp_path / "user-config"))
    monkeypatch.setenv("WEBSHEPHERD_DATA_DIR", str(tmp_path / "user-data"))
    decided: list = []
    real = run_browser.demo_servers

    @contextlib.asynccontextmanager
    async def with_a_person(*args: Any, **kwargs: Any):
        async with real(*args, **kwargs) as (server, token, shop):
            config_dir = server.config.config_dir
            person = asyncio.ensure_future(
                _decide_as_person(server.url, token, config_dir, decided)
            )
            try:
                yield server, token, shop
            finally:
                person.cancel()
                with contextlib.suppress(BaseException):
                    await person

    monkeypatch.setattr(run_browser, "demo_servers", with_a_person)
    out = io.StringIO()
    opts = BrowserDemoOptions(samples=1, guards=True, out=tmp_path / "out")
    code = run_browser.run_browser_demo(
        opts, model=str(tiny_model_path), console=Console(file=out, width=120)
    )
    text = out.getvalue()
    flat = " ".join(text.split())
    assert code == 0, text[-4000:]
    assert "nobody is paired" not in flat and "action failed" not in flat
    assert "waits unsent for a decision: you approve or reject it in the extension's side" in flat
    assert "Ctrl-C stops the demo" in flat
    commits = [(d, r["method"], urlsplit(r["url"]).path) for k, d, r in decided if k == "commit"]
    assert [c[:2] for c in commits] == [("approve", "POST")] * len(commits) and len(commits) >= 2
    assert ("always", "reject", None) in decided  # the tempting wrong candidate at step 3
    assert "Your turn:" in flat  # a person this quick may decide before the demo says it waits
    summary = json.loads((tmp_path / "out" / "summary.json").read_text("utf-8"))
    assert summary["outcome"]["status"] == "success"
    assert "Traceback" not in capsys.readouterr().err


def test_guards_stop_on_ctrl_c_within_a_second_while_waiting_for_a_decision(
    xvfb_display, tiny_model_path, tmp_path
):
    """Ctrl-C (SIGINT to the demo's process group, as a terminal sends it) while the demo
    waits for a person: it says so and exits within a second, with no traceback."""
    env = demo_env(tmp_path, tiny_model_path, DISPLAY=xvfb_display)
    proc = subprocess.Popen(
        [*DEMO, "--browser", "--guards", *HEADED_ARGS[:4]],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        for line in proc.stdout:  # until it waits for the person (step 3's held candidate)
            lines.append(line)
            if "Your turn:" in line:
                break
        assert any("Your turn:" in x for x in lines), "".join(lines)[-3000:]
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=30)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    rest, err = proc.stdout.read(), proc.stderr.read() if proc.stderr else ""
    flat = " ".join(("".join(lines) + rest).split())
    assert proc.returncode == 130, flat[-3000:] + err[-3000:]
    assert "stopped (Ctrl-C)" in flat and "Traceback" not in err + rest
    assert "nobody is paired" not in flat
    assert elapsed < 1.0, f"exited {elapsed:.2f} s after SIGINT"
