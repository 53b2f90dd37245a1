"""``bench/miniwob_holds.py`` end to end on a tiny budget, as a subprocess: every section's
figures land in the JSON file, and what it counts is what the pages do (no timing assertions).

Needs the integrations venv with the ``miniwob`` package (``make test`` builds it)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.venvs import integrations_python

ROOT = Path(__file__).resolve().parents[2]
IPYTHON = integrations_python()

pytestmark = pytest.mark.model


def has_miniwob() -> bool:
    if not IPYTHON.exists():
        return False
    probe = subprocess.run([str(IPYTHON), "-c", "import miniwob, browsergym.miniwob"])
    return probe.returncode == 0


needs_miniwob = pytest.mark.skipif(
    not has_miniwob(),
    reason=f"no integrations venv with miniwob at {IPYTHON}: `make test` builds it",
)


def positive(x: object) -> bool:
    return isinstance(x, int | float) and math.isfinite(x) and x > 0


@needs_miniwob
def test_tiny_run_counts_what_the_pages_do(tmp_path: Path, tiny_model_path: Path) -> None:
    out = tmp_path / "holds.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "miniwob_holds.py"),
            *("--task", "click-checkboxes", "--task", "click-dialog", "--task", "email-inbox"),
            *("--steps", "1", "--resets", "1", "--repeats", "2", "--json", str(out)),
            # the venvs `make test VENV=... IVENV=...` names, never the defaults' folders
            *("--daemon-python", sys.executable, "--integrations-python", str(IPYTHON)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=540,
        env={**os.environ, "WEBSHEPHERD_TINY_MODEL": str(tiny_model_path)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "previous rules (name_match on)" in proc.stdout
    report = json.loads(out.read_text("utf-8"))

    finals = {t["task"]: t for t in report["finals"]["per_task"]}
    # MiniWoB's Submit ends the episode and sends nothing: only the name rule stopped it
    box = finals["click-checkboxes"]
    assert box["found"] and box["how"] == "subbtn" and box["name"] == "Submit"
    assert (box["old_rules"], box["new_rules"], box["gate"]) == (["name_match"], [], [])
    # a button named without a listed word: no rule, old or new, and nothing sent
    dialog = finals["click-dialog"]
    assert dialog["found"] and dialog["old_rules"] == [] and dialog["gate"] == []
    # the inbox needs more than one click to end: counted as not found
    assert not finals["email-inbox"]["found"]
    assert report["finals"]["found"] == 2 and report["finals"]["old_stopped"] == 1

    writes = report["writes"]
    assert writes["writes"] >= 1 and writes["gate_unheld"] == 0
    for page in writes["pages"]:
        assert page["sent_with_gate"] == 0 or page["kind"] is None, page
        assert bool(page["gate_held"]) == (page["kind"] is not None), page
        if page["kind"] is not None:
            assert page["sent_without_gate"] >= 1, page  # it does write when let go
    assert writes["old_unheld"] > writes["gate_unheld"]

    latency = report["latency"]
    assert all(positive(v) for v in latency["median_ms"].values())
    assert latency["watch_flagged"] is True  # the watch-mode daemon let it go, flagged

    wrapper = report["wrapper"]
    assert positive(wrapper["ratio"]) and len(wrapper["samples_s"]["plain"]) == 1
    assert len(wrapper["daemon_timings"]) == 2  # the alternating session and one fresh one
    assert len(wrapper["fresh_first_queue_ms"]) == 1
