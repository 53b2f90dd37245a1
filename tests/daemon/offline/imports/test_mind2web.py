"""A mind2web trajectory folder: screenshots are read only inside the folder (or an allowed
one), and only when they are images."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from webshepherd.daemon.dev.screenshots import axtree_png
from webshepherd.daemon.offline.files import FileLimitError
from webshepherd.daemon.offline.imports import load_run


def test_screenshots_outside_or_not_images_are_left_out(tmp_path: Path) -> None:
    folder, outside = tmp_path / "m2w", tmp_path / "outside"
    (folder / "trajectory").mkdir(parents=True)
    outside.mkdir()
    (outside / "shot.png").write_bytes(axtree_png("outside"))
    result = {"task": "Buy", "website": "http://a/", "action_history": ["a", "b", "c"]}
    (folder / "result.json").write_text(json.dumps(result))
    (folder / "trajectory" / "0_screenshot.png").symlink_to(outside / "shot.png")
    (folder / "trajectory" / "1_screenshot.webp").write_text("not an image")
    (folder / "trajectory" / "2_screenshot.jpg").write_bytes(axtree_png("ok"))
    run = load_run(folder)
    assert [s.screenshot for s in run.steps] == [None, None, axtree_png("ok")]
    assert [s.screenshot_mime for s in run.steps][2] == "image/png"
    assert len(run.warnings) == 2 and "outside the run's folder" in run.warnings[0]
    assert "1_screenshot.webp: not an image" in run.warnings[1]
    assert load_run(folder, allow=[outside]).steps[0].screenshot == axtree_png("outside")


def test_result_json_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    folder, outside = tmp_path / "m2w", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (outside / "result.json").write_text(json.dumps({"task": "x", "action_history": []}))
    (folder / "result.json").symlink_to(outside / "result.json")
    with pytest.raises(FileLimitError, match=r"result\.json \(-> .*outside the run's folder"):
        load_run(folder)
