"""The integrations' ``webshepherd`` commands (``blame``, ``label rollouts``) come through the
``webshepherd.commands`` entry points: listed by the daemon's command line in both venvs, run
in the integrations' venv, and in a venv without BrowserGym (the main one) refused in one line
naming ``make setup-integrations``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.fixtures.venvs import daemon_python
from tests.integrations.conftest import ROOT


def webshepherd(python: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [python, "-m", "webshepherd.daemon.cli", *args]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_both_venvs_list_the_commands_and_only_the_integrations_venv_runs_them(
    tmp_path: Path,
) -> None:
    for python in (sys.executable, daemon_python()):
        shown = webshepherd(python, "--help")
        assert shown.returncode == 0, shown.stderr
        assert "    blame " in shown.stdout and "    label " in shown.stdout
    args = ("blame", "nosuch", "--agent", "tests.fixtures.miniwob_agent:make", "--no-record")
    missing = webshepherd(daemon_python(), *args, "--data-dir", str(tmp_path))
    assert missing.returncode == 1
    (line,) = missing.stderr.splitlines()
    assert line.startswith("webshepherd: `webshepherd blame` needs gymnasium"), line
    assert "`make setup-integrations`" in line
    here = webshepherd(sys.executable, *args, "--data-dir", str(tmp_path))
    assert here.returncode == 1  # it runs: the recording is what is missing
    assert here.stderr.splitlines() == [
        f"webshepherd: no recording at {tmp_path / 'webshepherd.sqlite3'} (pass --data-dir, "
        "or run the daemon first)"
    ]
    wrong = webshepherd(sys.executable, "label", "rollouts", "nosuch", "--agent", "nomodule")
    assert wrong.returncode == 1
    assert wrong.stderr.splitlines() == [
        "webshepherd: --agent 'nomodule': expected MODULE:FACTORY (e.g. my_agent:make)"
    ]
