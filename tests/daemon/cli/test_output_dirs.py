"""``report`` and ``export`` without ``--out`` write under the data dir, never the current
directory; ``report --open`` without a display says where the file is.

Set-up: one session recorded through a real daemon (tiny model, a reference checklist); these
tests are about where files go, not about rewards."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from webshepherd.daemon.cli import main

from tests.fixtures.daemon import score_without_approval, start_session


async def recorded(daemon) -> tuple[str, str]:
    agent = await daemon.client()
    sid = await start_session(agent)
    await score_without_approval(agent, sid, samples=1)
    await agent.request({"type": "session.end", "session_id": sid, "outcome": "success"})
    return sid, str(daemon.config.data_dir)


async def test_report_goes_under_the_data_dir_and_open_without_display_prints_the_path(
    daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    sid, data_dir = await recorded(daemon)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr("sys.platform", "linux")
    assert await asyncio.to_thread(main, ["report", sid, "--data-dir", data_dir, "--open"]) == 0
    path = Path(data_dir) / "reports" / f"webshepherd-{sid}.html"
    assert path.is_file() and list(cwd.iterdir()) == []
    out = capsys.readouterr().out
    assert f"wrote {path}" in out
    assert f"no web browser to open it here; open {path.resolve()}" in out


async def test_export_goes_to_a_new_folder_under_the_data_dir(
    daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    _, data_dir = await recorded(daemon)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    args = ["export", "--format", "webprm", "--data-dir", data_dir, "--quiet"]
    capsys.readouterr()
    assert await asyncio.to_thread(main, args) == 0
    assert capsys.readouterr() == ("", "")  # --quiet: nothing but errors
    (folder,) = (Path(data_dir) / "exports").iterdir()
    assert folder.name.startswith("webprm-")
    assert (folder / "webprm.jsonl").is_file()
    assert list(cwd.iterdir()) == []
