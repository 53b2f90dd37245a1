"""The import contracts in pyproject.toml ([tool.importlinter]), as ``make lint`` runs them:
the real tree keeps them, and a planted violation breaks them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("protocol", "daemon", "tui", "integrations")
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _layout(root: Path, copy: bool) -> Path:
    """``root/webshepherd`` as the Makefile's build/typecheck makes it (links), or a copy of the
    sources (to plant a module in)."""
    pkg = root / "webshepherd"
    pkg.mkdir()
    (pkg / "__init__.py").touch()
    for name in PACKAGES:
        if copy:
            shutil.copytree(
                REPO / name, pkg / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
        else:
            (pkg / name).symlink_to(REPO / name, target_is_directory=True)
    return root


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), str(REPO / "pyproject.toml"), "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_tree_keeps_the_contracts(tmp_path):
    run = _lint_imports(_layout(tmp_path, copy=False))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_a_planted_violation_breaks_them(tmp_path):
    root = _layout(tmp_path, copy=True)
    planted = root / "webshepherd" / "daemon" / "recorder" / "planted.py"
    planted.write_text("from webshepherd.daemon.sessions.state import LiveSession\n")
    run = _lint_imports(root)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "sessions and recorder are independent" in run.stdout
    assert "webshepherd.daemon.recorder.planted" in run.stdout
    assert "1 broken" in run.stdout


def test_a_planted_server_import_in_config_breaks_them(tmp_path):
    root = _layout(tmp_path, copy=True)
    config = root / "webshepherd" / "daemon" / "config.py"
    config.write_text(
        config.read_text() + "\nfrom webshepherd.daemon.server.quotas import Quotas  # noqa\n"
    )
    run = _lint_imports(root)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "config imports no server BROKEN" in run.stdout
    assert "webshepherd.daemon.config -> webshepherd.daemon.server.quotas" in run.stdout
    assert "1 broken" in run.stdout


def test_a_planted_thread_or_future_in_sessions_breaks_them(tmp_path):
    root = _layout(tmp_path, copy=True)
    sessions = root / "webshepherd" / "daemon" / "sessions"
    (sessions / "planted.py").write_text("from asyncio import Event  # noqa\n")
    state = sessions / "state.py"
    state.write_text(state.read_text() + "\nimport concurrent.futures  # noqa\n")
    run = _lint_imports(root)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "sessions imports nothing of threads or futures (sans-I/O) BROKEN" in run.stdout
    assert "webshepherd.daemon.sessions.planted -> asyncio" in run.stdout
    assert "webshepherd.daemon.sessions.state -> concurrent" in run.stdout
    assert "1 broken" in run.stdout
