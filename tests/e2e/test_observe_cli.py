"""`webshepherd observe URL` prints exactly the text the daemon would receive."""

from __future__ import annotations

import subprocess
import sys

from tests.e2e.browser import (
    GOLDEN,
    GOLDEN_PORT,
    REPO,
    require_browser,
    serve_dir,
    without_inline_text_boxes,
)

require_browser()


def run_observe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "webshepherd.daemon.cli", "observe", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def test_observe_prints_browsergym_text_without_inline_text_boxes():
    with serve_dir(GOLDEN, GOLDEN_PORT) as base:
        default = run_observe(f"{base}/p4-iframe.html")
        visible = run_observe(f"{base}/p1-form.html", "--visible")
    assert default.returncode == 0, default.stderr
    want = without_inline_text_boxes((GOLDEN / "p4-iframe.default.txt").read_text("utf-8"))
    assert default.stdout == want + "\n"
    assert visible.returncode == 0, visible.stderr
    want = without_inline_text_boxes((GOLDEN / "p1-form.visible.txt").read_text("utf-8"))
    assert visible.stdout == want + "\n"


def test_observe_without_a_built_extension_says_how_to_build_it(tmp_path):
    res = run_observe("http://127.0.0.1:9/", "--extension", str(tmp_path))
    assert res.returncode == 1
    assert "npm run build" in res.stderr
