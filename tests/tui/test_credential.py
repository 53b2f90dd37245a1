"""The TUI's approver credential file: owner-only, read back as written, absent when unpaired;
and no agent path (the SDK, the integrations) reads it."""

from __future__ import annotations

import stat
from pathlib import Path

from webshepherd.tui.credential import credential_path, read_credential, write_credential

ROOT = Path(__file__).resolve().parents[2]


def test_written_owner_only_and_read_back(tmp_path: Path) -> None:
    assert read_credential(tmp_path) is None
    path = write_credential("c" * 43, tmp_path / "config")
    assert path == credential_path(tmp_path / "config")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_credential(tmp_path / "config") == "c" * 43


def test_the_default_is_the_config_dir(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("WEBSHEPHERD_CONFIG_DIR", str(tmp_path))
    assert credential_path() == tmp_path / "tui-approver"


def test_no_agent_path_reads_an_approver_credential() -> None:
    """The SDK and the integrations never name the TUI's file or the daemon's registry."""
    for folder in ("protocol", "integrations"):
        for source in (ROOT / folder).rglob("*.py"):
            text = source.read_text(encoding="utf-8")
            for name in ("tui.credential", "tui-approver", "approvers.json", "server.approvers"):
                assert name not in text, (source, name)
